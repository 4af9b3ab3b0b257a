"""Build catalog.yaml from the docstrings of installed code: the stdlib and a few packages.

Run with the project's virtualenv, offline:

    /work/main/.venv/bin/python benchmarks/data/retrieval_docstrings/extract.py

Every tool is a real function, class or method. Its name is the qualified name in snake_case
(`shutil.copytree` -> `shutil_copytree`, `pathlib.Path.unlink` -> `path_unlink`), its
description the first paragraph of the docstring as the code ships it (only whitespace is
collapsed, and a paragraph past ~300 characters is cut at a sentence end), its params the
signature's parameter names, its one tag the module it comes from. Near-duplicates the code
really has (os.remove / os.unlink, json.dump / json.dumps) are kept on purpose: retrieval is
meant to collapse them. The output is committed; this script documents where it came from.
"""

from __future__ import annotations

import importlib
import inspect
import platform
import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
LIMIT = 300

# (name prefix, object path, tag, members). An object path ending in a class takes its
# methods; members None takes every public function of a module. Kept dense on purpose.
# fmt: off
SOURCES: list[tuple[str, str, str, list[str] | None]] = [
    ("", "builtins", "builtins",
     ["pow", "abs", "round", "divmod", "sum", "min", "max", "sorted", "hex", "bin", "oct",
      "ord", "chr", "open"]),
    ("shutil", "shutil", "shutil",
     ["copy", "copy2", "copyfile", "copyfileobj", "copymode", "copystat", "copytree",
      "rmtree", "move", "disk_usage", "chown", "which", "make_archive", "unpack_archive",
      "get_archive_formats", "get_terminal_size"]),
    ("os", "os", "os",
     ["listdir", "scandir", "mkdir", "makedirs", "remove", "unlink", "rmdir", "removedirs",
      "rename", "renames", "replace", "stat", "lstat", "chmod", "chown", "getcwd", "chdir",
      "walk", "getenv", "putenv", "unsetenv", "getpid", "getppid", "kill", "cpu_count",
      "urandom", "symlink", "readlink", "link", "access", "utime", "getlogin", "uname",
      "system", "truncate", "umask", "getloadavg", "statvfs", "nice", "get_terminal_size"]),
    ("os_path", "os.path", "os.path", None),
    ("path", "pathlib.Path", "pathlib",
     ["absolute", "chmod", "cwd", "exists", "expanduser", "glob", "group", "hardlink_to",
      "home", "is_absolute", "is_dir", "is_file", "is_mount", "is_symlink", "iterdir",
      "joinpath", "match", "mkdir", "open", "owner", "read_bytes", "read_text", "readlink",
      "relative_to", "rename", "replace", "resolve", "rglob", "rmdir", "samefile", "stat",
      "symlink_to", "touch", "unlink", "with_name", "with_stem", "with_suffix",
      "write_bytes", "write_text", "is_relative_to", "as_uri"]),
    ("zipfile", "zipfile", "zipfile", ["is_zipfile"]),
    ("zip_file", "zipfile.ZipFile", "zipfile",
     ["extractall", "extract", "namelist", "infolist", "getinfo", "open", "read", "write",
      "writestr", "testzip", "printdir", "setpassword"]),
    ("tarfile", "tarfile", "tarfile", ["is_tarfile", "open"]),
    ("tar_file", "tarfile.TarFile", "tarfile",
     ["extractall", "extract", "extractfile", "getnames", "getmembers", "getmember", "add",
      "addfile", "list"]),
    ("gzip", "gzip", "gzip", ["open", "compress", "decompress"]),
    ("bz2", "bz2", "bz2", ["open", "compress", "decompress"]),
    ("lzma", "lzma", "lzma", ["open", "compress", "decompress"]),
    ("zlib", "zlib", "zlib", ["compress", "decompress", "crc32", "adler32"]),
    ("hashlib", "hashlib", "hashlib",
     ["md5", "sha1", "sha256", "sha512", "sha3_256", "blake2b", "new", "pbkdf2_hmac",
      "scrypt", "file_digest"]),
    ("hmac", "hmac", "hmac", ["new", "compare_digest", "digest"]),
    ("json", "json", "json", ["dump", "dumps", "load", "loads"]),
    ("csv", "csv", "csv",
     ["reader", "writer", "register_dialect", "list_dialects"]),
    ("sniffer", "csv.Sniffer", "csv", ["sniff"]),
    ("sqlite3", "sqlite3", "sqlite3", ["connect", "complete_statement"]),
    ("connection", "sqlite3.Connection", "sqlite3",
     ["execute", "executemany", "executescript", "commit", "rollback", "backup", "iterdump",
      "create_function", "close", "cursor", "blobopen"]),
    ("cursor", "sqlite3.Cursor", "sqlite3", ["fetchall", "fetchone", "fetchmany"]),
    ("datetime", "datetime.datetime", "datetime",
     ["now", "utcnow", "today", "fromisoformat", "strptime", "strftime", "isoformat",
      "timestamp", "fromtimestamp", "astimezone", "replace", "weekday", "isoweekday",
      "isocalendar", "combine", "utcoffset"]),
    ("date", "datetime.date", "datetime", ["today", "fromisoformat", "fromordinal", "toordinal"]),
    ("timedelta", "datetime.timedelta", "datetime", ["total_seconds"]),
    ("calendar", "calendar", "calendar",
     ["isleap", "leapdays", "monthrange", "weekday", "month", "monthcalendar", "prmonth",
      "calendar", "timegm"]),
    ("zoneinfo", "zoneinfo", "zoneinfo", ["ZoneInfo", "available_timezones"]),
    ("time", "time", "time",
     ["time", "sleep", "strftime", "strptime", "localtime", "gmtime", "mktime",
      "perf_counter", "monotonic", "ctime", "asctime", "time_ns", "process_time"]),
    ("statistics", "statistics", "statistics", None),
    ("math", "math", "math", None),
    ("random", "random", "random",
     ["random", "randint", "randrange", "choice", "choices", "sample", "shuffle", "uniform",
      "gauss", "normalvariate", "seed", "triangular", "expovariate", "getrandbits"]),
    ("secrets", "secrets", "secrets",
     ["token_hex", "token_bytes", "token_urlsafe", "choice", "randbelow", "randbits",
      "compare_digest"]),
    ("uuid", "uuid", "uuid", ["uuid1", "uuid3", "uuid4", "uuid5", "getnode"]),
    ("base64", "base64", "base64",
     ["b64encode", "b64decode", "urlsafe_b64encode", "urlsafe_b64decode", "b32encode",
      "b32decode", "b16encode", "b16decode", "a85encode", "a85decode", "b85encode",
      "b85decode"]),
    ("binascii", "binascii", "binascii", ["hexlify", "unhexlify", "crc32"]),
    ("re", "re", "re",
     ["compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn",
      "split", "escape"]),
    ("textwrap", "textwrap", "textwrap", ["wrap", "fill", "shorten", "dedent", "indent"]),
    ("difflib", "difflib", "difflib",
     ["unified_diff", "context_diff", "ndiff", "get_close_matches", "restore"]),
    ("sequence_matcher", "difflib.SequenceMatcher", "difflib",
     ["ratio", "get_matching_blocks", "get_opcodes"]),
    ("unicodedata", "unicodedata", "unicodedata",
     ["name", "lookup", "normalize", "category", "numeric", "decimal", "digit",
      "east_asian_width", "combining", "bidirectional", "mirrored", "decomposition",
      "is_normalized"]),
    ("string", "string", "string", ["capwords"]),
    ("str", "builtins.str", "str",
     ["upper", "lower", "casefold", "title", "capitalize", "swapcase", "strip", "split",
      "splitlines", "replace", "zfill", "center", "ljust", "startswith", "endswith", "count",
      "find", "join", "encode", "isdigit", "isnumeric"]),
    ("html", "html", "html", ["escape", "unescape"]),
    ("urllib_parse", "urllib.parse", "urllib.parse",
     ["urlparse", "urlsplit", "urlunparse", "urlunsplit", "urljoin", "urldefrag", "quote",
      "quote_plus", "unquote", "unquote_plus", "urlencode", "parse_qs", "parse_qsl"]),
    ("urllib_request", "urllib.request", "urllib.request", ["urlopen", "urlretrieve"]),
    ("email", "email", "email", ["message_from_string", "message_from_bytes"]),
    ("email_utils", "email.utils", "email",
     ["formataddr", "parseaddr", "formatdate", "make_msgid",
      "getaddresses"]),
    ("email_message", "email.message.EmailMessage", "email",
     ["get_body", "iter_attachments"]),
    ("smtp", "smtplib.SMTP", "smtplib",
     ["sendmail", "send_message", "login", "starttls", "quit", "ehlo", "verify", "connect"]),
    ("mimetypes", "mimetypes", "mimetypes",
     ["guess_type", "guess_extension", "guess_all_extensions"]),
    ("http_connection", "http.client.HTTPConnection", "http.client",
     ["request", "getresponse", "set_tunnel", "close"]),
    ("http_response", "http.client.HTTPResponse", "http.client",
     ["read", "getheader", "getheaders"]),
    ("socket", "socket", "socket",
     ["gethostname", "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "getaddrinfo",
      "getfqdn", "create_connection", "create_server", "getservbyname", "getservbyport",
      "inet_aton", "inet_ntoa", "inet_pton", "inet_ntop", "htons", "ntohs",
      "getdefaulttimeout", "setdefaulttimeout", "socketpair", "if_nameindex"]),
    ("ipaddress", "ipaddress", "ipaddress",
     ["ip_address", "ip_network", "ip_interface", "summarize_address_range",
      "collapse_addresses"]),
    ("ipv4_network", "ipaddress.IPv4Network", "ipaddress",
     ["subnets", "supernet", "hosts", "overlaps", "subnet_of", "address_exclude"]),
    ("subprocess", "subprocess", "subprocess",
     ["run", "call", "check_call", "check_output", "getoutput", "getstatusoutput", "Popen"]),
    ("popen", "subprocess.Popen", "subprocess",
     ["communicate", "wait", "kill", "terminate", "poll", "send_signal"]),
    ("tempfile", "tempfile", "tempfile",
     ["mkstemp", "mkdtemp", "gettempdir", "TemporaryFile", "NamedTemporaryFile",
      "TemporaryDirectory", "SpooledTemporaryFile"]),
    ("glob", "glob", "glob", ["glob", "iglob", "escape"]),
    ("fnmatch", "fnmatch", "fnmatch", ["fnmatch", "fnmatchcase", "filter", "translate"]),
    ("filecmp", "filecmp", "filecmp", ["cmp", "cmpfiles"]),
    ("locale", "locale", "locale",
     ["setlocale", "getlocale", "localeconv", "currency", "format_string", "atof", "atoi",
      "str", "getpreferredencoding", "strcoll", "normalize", "delocalize"]),
    ("platform", "platform", "platform",
     ["system", "node", "release", "version", "machine", "processor", "python_version",
      "platform", "uname", "architecture"]),
    ("getpass", "getpass", "getpass", ["getuser", "getpass"]),
    ("webbrowser", "webbrowser", "webbrowser", ["open", "open_new_tab"]),
    ("pprint", "pprint", "pprint", ["pprint", "pformat"]),
    ("pandas", "pandas", "pandas",
     ["read_csv", "read_excel", "read_json", "read_sql", "read_parquet", "read_html",
      "concat", "to_datetime", "cut", "get_dummies", "crosstab", "date_range", "merge"]),
    ("dataframe", "pandas.DataFrame", "pandas",
     ["to_csv", "to_excel", "to_json", "to_parquet", "to_sql", "to_dict", "to_markdown",
      "to_html", "merge", "join", "groupby", "pivot_table", "pivot", "melt", "sort_values",
      "drop_duplicates", "dropna", "fillna", "describe", "head", "tail", "rename", "drop",
      "query", "apply", "corr", "resample", "rolling", "value_counts", "sample", "nlargest",
      "nsmallest", "astype", "isna", "explode", "cumsum", "rank", "mean", "sum", "median",
      "quantile", "transpose", "set_index", "reset_index", "duplicated", "interpolate"]),
    ("numpy", "numpy", "numpy",
     ["mean", "median", "std", "var", "percentile", "sum", "cumsum", "sort", "argsort",
      "unique", "linspace", "arange", "dot", "matmul", "transpose", "reshape", "concatenate",
      "where", "histogram", "corrcoef", "polyfit", "round", "clip", "loadtxt", "savetxt",
      "save", "load", "interp", "convolve", "gradient", "diff", "cross", "zeros", "ones",
      "eye", "average", "cov"]),
    ("numpy_linalg", "numpy.linalg", "numpy", ["inv", "det", "solve", "eig", "norm", "svd"]),
    ("numpy_fft", "numpy.fft", "numpy", ["fft", "ifft"]),
    ("httpx", "httpx", "httpx",
     ["get", "post", "put", "patch", "delete", "head", "options", "request", "stream"]),
]
# fmt: on

# A docstring that opens with its own signature ("gethostbyname(host) -> address") puts the
# description in the paragraph after it.
SIGNATURE_LINE = re.compile(r"^[\w.]+\(.*\)(\s*->\s*.*)?$")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def resolve(path: str) -> Any:
    """Import the longest module prefix of `path` and walk the rest as attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ImportError(path)


def snake(name: str) -> str:
    """CamelCase and dotted names to snake_case: `NamedTemporaryFile` -> `named_temporary_file`."""
    spaced = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name.replace(".", "_"))
    return spaced.lower()


def paragraphs(obj: Any) -> tuple[str, list[str]]:
    """The description paragraph and any parameter names a signature line gives."""
    doc = inspect.getdoc(obj) or ""
    found = [" ".join(p.split()) for p in re.split(r"\n\s*\n", doc) if p.strip()]
    named: list[str] = []
    if found and SIGNATURE_LINE.match(found[0]) and len(found) > 1:
        inside = found[0][found[0].index("(") + 1 : found[0].rindex(")")]
        named = re.findall(r"(?<![\w*])([A-Za-z_]\w*)(?=\s*(?:=|,|\]|$))", inside)
        found = found[1:]
    return (found[0] if found else ""), named


def shorten(text: str) -> str:
    """Whole sentences up to about LIMIT characters; a first sentence longer stays whole."""
    if len(text) <= LIMIT:
        return text
    kept = ""
    for sentence in SENTENCE_END.split(text):
        if kept and len(kept) + 1 + len(sentence) > LIMIT:
            break
        kept = f"{kept} {sentence}".strip()
    return kept


def params(obj: Any, fallback: list[str]) -> list[str]:
    """Parameter names from the signature, without self/cls, *args and **kwargs."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return [p for p in fallback if p not in ("self", "cls")]
    skipped = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [
        p.name
        for p in signature.parameters.values()
        if p.kind not in skipped and p.name not in ("self", "cls")
    ]


def members(path: str, chosen: list[str] | None) -> list[str]:
    """The chosen members, or every public function a module defines itself."""
    if chosen is not None:
        return chosen
    module = resolve(path)
    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and callable(value)
        and not inspect.isclass(value)
        # os.path is posixpath here, and its stat-based helpers live in genericpath.
        and getattr(value, "__module__", module.__name__)
        in (module.__name__, "posixpath", "genericpath")
    )


def tool(prefix: str, path: str, tag: str, member: str) -> dict[str, Any]:
    """One catalog entry for `path.member`."""
    obj = getattr(resolve(path), member)
    description, fallback = paragraphs(obj)
    if not description:
        msg = f"{path}.{member} has no docstring"
        raise ValueError(msg)
    name = snake(f"{prefix}_{member}" if prefix else member)
    return {
        "name": name,
        "description": shorten(description),
        "params": params(obj, fallback),
        "tags": [tag],
    }


def header(count: int) -> str:
    """Where the catalog came from, as a YAML comment."""
    versions = ", ".join(
        f"{package} {metadata.version(package)}" for package in ("pandas", "numpy", "httpx")
    )
    return (
        f"# {count} tools extracted by extract.py from installed docstrings; do not edit by hand.\n"
        f"# Python {platform.python_version()} ({sys.implementation.name}, {sys.platform}); "
        f"{versions}.\n"
    )


def main() -> None:
    catalog: list[dict[str, Any]] = []
    for prefix, path, tag, chosen in SOURCES:
        catalog.extend(tool(prefix, path, tag, m) for m in members(path, chosen))
    names = [t["name"] for t in catalog]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        msg = f"tool names are not unique: {duplicated}"
        raise ValueError(msg)
    body = yaml.safe_dump(catalog, sort_keys=False, allow_unicode=True, width=100)
    (HERE / "catalog.yaml").write_text(header(len(catalog)) + body, encoding="utf-8")


if __name__ == "__main__":
    main()
