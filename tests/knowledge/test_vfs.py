"""The virtual files and their shell-like commands: Python over strings, paths that cannot
leave `/`, bounded output."""

from __future__ import annotations

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

    def test_a_catastrophic_pattern_is_stopped(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Exponential backtracking meets the time limit, not a hung worker."""
        monkeypatch.setattr(vfs_module, "REGEX_SECONDS", 0.2)
        vfs = VirtualFiles()
        vfs.write("/f", "a" * 5000 + "!")
        with pytest.raises(ShellError, match=r"took longer than"):
            vfs.grep("(a|aa)+$")
