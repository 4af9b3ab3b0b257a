"""Shell-like commands over the run's virtual files (what save_search_results wrote).

They read `agentrt.knowledge.vfs.VirtualFiles` only: Python over strings, no process, no real
file system; paths cannot leave the virtual `/`, and every output is bounded.
"""

from __future__ import annotations

from agentrt import ToolContext, tool
from agentrt.knowledge.vfs import VirtualFiles, files_of


def _files(ctx: ToolContext) -> VirtualFiles:
    return files_of(ctx.artifacts)


@tool(cache=False)
def ls(ctx: ToolContext, path: str = "/") -> str:
    """List the virtual files and folders under a path (saved search results live in
    /results/<knowledge base>/).

    Args:
        path: A folder or a file of the virtual files.
    """
    return _files(ctx).ls(path)


@tool(cache=False)
def cat(ctx: ToolContext, path: str, offset: int = 0) -> str:
    """Print a virtual file (long files are cut: prefer grep or head). A line too long to
    print whole ends with the offset to read on from.

    Args:
        path: The file.
        offset: Start at this character of the file (0: the beginning).
    """
    return _files(ctx).cat(path, offset)


@tool(cache=False)
def head(ctx: ToolContext, path: str, lines: int = 10) -> str:
    """Print the first lines of a virtual file.

    Args:
        path: The file.
        lines: How many lines.
    """
    return _files(ctx).head(path, lines)


@tool(cache=False)
def grep(
    ctx: ToolContext,
    pattern: str,
    path: str = "/",
    ignore_case: bool = False,
    line_numbers: bool = False,
    count: bool = False,
) -> str:
    """Print the lines of virtual files that match a regular expression (a folder is
    searched recursively; each line then starts with its file).

    Args:
        pattern: A regular expression (RE2 syntax: Python's, without backreferences or
            look-around).
        path: A file or a folder.
        ignore_case: Match regardless of case, like grep -i.
        line_numbers: Prefix each line with its number, like grep -n.
        count: Print only the number of matching lines per file, like grep -c.
    """
    return _files(ctx).grep(
        pattern, path, ignore_case=ignore_case, line_numbers=line_numbers, count=count
    )


@tool(cache=False)
def wc(ctx: ToolContext, path: str = "/") -> str:
    """Count the lines, words and characters of virtual files, like wc.

    Args:
        path: A file, or a folder (each file, then the total).
    """
    return _files(ctx).wc(path)
