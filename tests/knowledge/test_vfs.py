"""The virtual files and their shell-like commands: Python over strings, paths that cannot
leave `/`, bounded output."""

from __future__ import annotations

import random
import re

import anyio
import anyio.lowlevel
import pytest

from agentrt.exceptions import ShellError
from agentrt.knowledge import vfs as vfs_module
from agentrt.knowledge.vfs import VirtualFiles


@pytest.fixture
def files() -> VirtualFiles:
    vfs = VirtualFiles(max_lines=5, max_chars=400)
    vfs.write("/results/guides/search_1.md", "alpha one\nBeta two\nalpha three\n")
    vfs.write("results/support/search_2.md", "gamma\nALPHA four\n")
    return vfs


class TestCommands:
    def test_ls(self, files: VirtualFiles) -> None:
        assert files.ls() == "results/"
        assert files.ls("/results") == "guides/\nsupport/"
        assert files.ls("/results/guides") == "search_1.md  (3 lines, 31 chars)"

    def test_cat_and_head(self, files: VirtualFiles) -> None:
        assert files.cat("/results/support/search_2.md") == "gamma\nALPHA four"
        assert files.head("/results/guides/search_1.md", 2) == "alpha one\nBeta two"

    def test_grep_flags(self, files: VirtualFiles) -> None:
        one = "/results/guides/search_1.md"
        assert files.grep("^alpha", one) == "alpha one\nalpha three"
        assert files.grep("alpha", one, line_numbers=True) == "1:alpha one\n3:alpha three"
        assert files.grep("alpha", one, count=True) == "2"
        assert files.grep("alpha", "/", ignore_case=True, count=True) == (
            "/results/guides/search_1.md:2\n/results/support/search_2.md:1"
        )
        assert files.grep("alpha", "/results", ignore_case=True) == (
            "/results/guides/search_1.md:alpha one\n"
            "/results/guides/search_1.md:alpha three\n"
            "/results/support/search_2.md:ALPHA four"
        )
        assert files.grep("delta") == "(no match)"

    def test_wc(self, files: VirtualFiles) -> None:
        assert files.wc("/results/support/search_2.md").split() == [
            "2",
            "3",
            "17",
            "/results/support/search_2.md",
        ]
        assert files.wc("/").splitlines()[-1].split() == ["5", "9", "48", "total"]

    def test_output_is_bounded_and_says_so(self) -> None:
        vfs = VirtualFiles(max_lines=3, max_chars=1000)
        vfs.write("/big", "\n".join(f"line {i}" for i in range(100)))
        out = vfs.cat("/big").splitlines()
        assert out == [
            "line 0",
            "line 1",
            "line 2",
            "[… 97 more line(s) not shown: narrow it with grep or head]",
        ]
        narrow = VirtualFiles(max_lines=100, max_chars=20)
        narrow.write("/big", "\n".join(f"line {i}" for i in range(100)))
        assert len(narrow.cat("/big")) < 100

    def test_errors_name_the_path_or_pattern(self, files: VirtualFiles) -> None:
        with pytest.raises(ShellError, match=r"^/nope: no such file or directory$"):
            files.cat("/nope")
        with pytest.raises(ShellError, match=r"^/results: is a directory$"):
            files.cat("/results")
        with pytest.raises(ShellError, match=r"'\(': not a valid regular expression"):
            files.grep("(")


class TestSandbox:
    @pytest.mark.parametrize(
        "path",
        ["..", "../etc/passwd", "/../etc/passwd", "/results/../../etc/passwd", "a/b/../../../x"],
    )
    def test_paths_cannot_climb_above_the_root(self, files: VirtualFiles, path: str) -> None:
        with pytest.raises(ShellError, match=r"goes above / \(there is nothing outside"):
            files.cat(path)
        with pytest.raises(ShellError, match=r"goes above /"):
            files.write(path, "x")

    @pytest.mark.parametrize("path", ["", "a\x00b", "..\\..\\windows", "x" * 600])
    def test_malformed_paths_are_refused(self, files: VirtualFiles, path: str) -> None:
        with pytest.raises(ShellError, match=r"not a valid path"):
            files.ls(path)

    @pytest.mark.parametrize("path", ["/etc/passwd", "/proc/self/environ", "/", "~/.ssh"])
    def test_real_files_are_never_read(self, files: VirtualFiles, path: str) -> None:
        """Paths that exist on the real machine name nothing here."""
        if path == "/":
            assert "root:" not in files.grep("root:", path)
            return
        with pytest.raises(ShellError, match=r"no such file or directory"):
            files.cat(path)

    def test_dot_dot_inside_the_tree_resolves(self, files: VirtualFiles) -> None:
        assert files.head("/results/support/../guides/./search_1.md", 1) == "alpha one"

    @pytest.mark.parametrize("pattern", ["(a|aa)+$", "(a+)+b", "(.*a){30}x"])
    def test_backtracking_patterns_answer_in_linear_time(self, pattern: str) -> None:
        """Patterns that make a backtracking engine exponential are plain work for RE2."""
        vfs = VirtualFiles()
        vfs.write("/f", "a" * 5000 + "!")
        assert vfs.grep(pattern) == "(no match)"


class TestPatternLimits:
    """What grep cannot bound it refuses, at once and saying why; what it runs, it runs in
    bounded time and memory, off the event loop."""

    @pytest.mark.parametrize(
        ("pattern", "why"),
        [
            ("((a{20}){20}){20}", r"invalid repetition size"),
            ("((a{200}){200}){200}", r"invalid repetition size"),
            (r"\pL{500}", r"compiles to more than RE2's 1024 KiB"),
            (r"(a)\1", r"invalid escape sequence: \\1"),
            ("(?=a)a", r"invalid perl operator: \(\?="),
            (r"end\Z", r"\\z, not \\Z"),
        ],
    )
    def test_what_re2_cannot_bound_is_refused(
        self, files: VirtualFiles, pattern: str, why: str
    ) -> None:
        with pytest.raises(ShellError, match=r"not a valid regular expression here") as refused:
            files.grep(pattern)
        assert re.search(why, str(refused.value)), str(refused.value)
        assert "RE2" in str(refused.value)

    async def test_the_event_loop_runs_while_a_grep_does(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A costly but bounded search (RE2's DFA thrashing) in a worker thread, as a sync tool
        runs: a ticker on the loop keeps advancing meanwhile, and the search answers. The wall
        time limit is lifted: on a loaded machine the search took over its 2 s."""
        monkeypatch.setattr(vfs_module, "REGEX_SECONDS", 600.0)
        rng = random.Random(7)
        vfs = VirtualFiles()
        for i in range(2):
            lines = ("".join(rng.choice("ab") for _ in range(20_000)) for _ in range(100))
            vfs.write(f"/f{i}", "\n".join(lines))
        ticks = 0
        running = True

        async def ticker() -> None:
            nonlocal ticks
            while running:
                await anyio.sleep(0.002)
                ticks += 1

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            await anyio.lowlevel.checkpoint()
            before = ticks
            answer = await anyio.to_thread.run_sync(vfs.grep, "[ab]*a[ab]{20}c")
            during = ticks - before
            running = False
        assert answer == "(no match)"
        assert during >= 3

    def test_the_time_limit_is_read_between_calls(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Past the wall-time limit, the next chunk is not searched."""
        monkeypatch.setattr(vfs_module, "REGEX_SECONDS", 0.0)
        monkeypatch.setattr(vfs_module, "REGEX_WORK", 1000)
        vfs = VirtualFiles()
        vfs.write("/f", "\n".join(f"line {i}" for i in range(1000)))
        with pytest.raises(ShellError, match=r"took longer than 0 s \(wall time\) over /f"):
            vfs.grep("line 999")

    def test_a_line_too_costly_for_the_pattern_is_refused(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(vfs_module, "REGEX_WORK", 10_000)
        vfs = VirtualFiles()
        vfs.write("/f", "short\n" + "b" * 1000 + "\nshort")
        assert vfs.grep("short", line_numbers=True) == "1:short\n3:short"
        with pytest.raises(ShellError, match=r"too costly to search line 2 of /f \(1000 bytes\)"):
            vfs.grep("(a|b){9}c")

    @pytest.mark.parametrize(
        "pattern", ["line", "^$", "^a", "b$", "x|y", r"\d{2}", "^", "é", "(?:^| )ab", "a.c"]
    )
    def test_searching_in_chunks_finds_what_searching_line_by_line_does(
        self, monkeypatch: pytest.MonkeyPatch, pattern: str
    ) -> None:
        """Whatever the chunk size, the lines found are those `re` finds one line at a time
        (the patterns here mean the same to both)."""
        rng = random.Random(3)
        alphabet = ["a", "b", "c", "x", "é", " ", "1", "2", "line"]
        lines = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(300)
        ]
        text = "\r\n".join(lines) + "\n"
        expected = [f"{n}:{line}" for n, line in enumerate(lines, 1) if re.search(pattern, line)]
        for work in (5_000, 20_000, 100_000, vfs_module.REGEX_WORK):
            monkeypatch.setattr(vfs_module, "REGEX_WORK", work)
            vfs = VirtualFiles(max_lines=1000, max_chars=100_000)
            vfs.write("/f", text)
            found = vfs.grep(pattern, line_numbers=True)
            assert found.splitlines() == (expected or ["(no match)"]), work
            assert vfs.grep(pattern, count=True) == str(len(expected))


class TestLongLines:
    """A line longer than the output limit is shown in part, with where to read on."""

    LINE = "".join(f"{i:04d}," for i in range(100))  # 500 characters
    READ_ON = (
        r"\[… the line goes on for \d+ more character\(s\): "
        r'cat with path="(/\S+)" offset=(\d+) reads on from here\]'
    )

    def read_whole_line(self, vfs: VirtualFiles, first: str) -> str:
        text, out = "", first
        for _ in range(20):
            found = re.search(self.READ_ON, out)
            if found is None:
                return text + out.splitlines()[0]
            text += out[: found.start()]
            out = vfs.cat(found.group(1), int(found.group(2)))
        raise AssertionError("the line never ended")

    def test_cat_shows_a_long_line_in_pieces(self) -> None:
        vfs = VirtualFiles(max_chars=120)
        vfs.write("/f", f"first\r\n{self.LINE}\nlast")
        out = vfs.cat("/f")
        assert out.startswith("first\n" + self.LINE[:113] + "[… the line goes on for 387")
        assert 'path="/f" offset=120 reads on from here]' in out
        assert out.endswith("[… 1 more line(s) not shown: narrow it with grep or head]")
        assert self.read_whole_line(vfs, out.split("\n", 1)[1]) == self.LINE
        assert vfs.cat("/f", 7 + len(self.LINE) + 1) == "last"

    def test_grep_and_head_say_where_to_read_on(self) -> None:
        vfs = VirtualFiles(max_chars=100)
        vfs.write("/a/f", "x\n" + self.LINE)
        vfs.write("/a/g", "nothing")
        found = vfs.grep("0042", "/a", line_numbers=True)
        assert found.startswith("/a/f:2:0000,")
        assert self.read_whole_line(vfs, found) == "/a/f:2:" + self.LINE
        assert self.read_whole_line(vfs, vfs.head("/a/f", 2).split("\n", 1)[1]) == self.LINE

    def test_an_offset_beyond_the_file_is_refused(self, files: VirtualFiles) -> None:
        with pytest.raises(
            ShellError,
            match=r"^offset 99: /results/support/search_2.md has 17 characters \(offsets 0–17\)$",
        ):
            files.cat("/results/support/search_2.md", 99)
