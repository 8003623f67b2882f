"""Anthropic's client-side memory tool (``memory_20250818``) served from mnemo.

Claude sends ``view``, ``create``, ``str_replace``, ``insert``, ``delete`` and ``rename`` commands over
paths under ``/memories``; the application executes them. :class:`AnthropicMemoryTool` executes them on
an :class:`~mnemo.AgentMemory`:

- ``/memories/MEMORY.md`` and ``/memories/USER.md`` are the curated stores, edited through
  :meth:`~mnemo.AgentMemory.curated_edit` (so their limits, threat scan, locking and provider mirroring
  all apply). The file is the entries joined by ``§`` lines. ``str_replace`` replaces the one entry
  holding ``old_str`` (an empty result removes it); ``insert`` adds ``insert_text`` as a new entry
  (entries have no positions: it goes last); ``create`` replaces every entry with the ``§``-separated
  entries of ``file_text`` and ``delete`` removes them all, each as one all-or-nothing batch. They cannot
  be renamed, and nothing else can take their names.
- Every other path is a plain file in a directory mnemo owns, one per user:
  ``HOME/memory-files/default`` or ``HOME/memory-files/users/<escaped user id>``. Writes are atomic and
  durable, serialised across processes by a lock file, capped in size and scanned for threats.

Paths are refused unless they are ``/memories`` or under it, with no ``..``, ``.``, empty or hidden
(``.name``) component, no NUL byte or backslash, and no symbolic link on the way. Refusals come back in
the tool's format: a ``tool_result`` with ``is_error`` and a one-line ``Error: ...`` text.

The commands may be the ``anthropic`` SDK's ``BetaMemoryTool20250818*Command`` models, the tool-use
block's ``input`` dict, or the ``tool_use`` block itself (:meth:`AnthropicMemoryTool.handle_tool_use`);
the SDK is not needed at run time.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._files import atomic_write, fsync_directory, remove_stale_temp_files
from .curated.entries import ENTRY_DELIMITER, joined_length, parse_entries
from .curated.errors import MemoryOpError
from .curated.ops import Add, MemoryOp, Remove, Replace, usage_text
from .curated.storage import FILENAMES
from .errors import InvalidArgument, MnemoError
from .graph.review import ReviewItem
from .review import HELD_MESSAGE
from .safety import scan
from .safety.scan import SCAN_CHAR_LIMIT
from .scope import path_segment
from .storage import open_curated
from .tools.memory import MemoryCall

if TYPE_CHECKING:
    from .agent import AgentMemory

TOOL_TYPE = "memory_20250818"
TOOL_NAME = "memory"
ROOT = "/memories"
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")

# Every character of a file is scanned, so no file outgrows the scanner's window.
MAX_FILE_BYTES = SCAN_CHAR_LIMIT
MAX_TOTAL_BYTES = 8 * 1024 * 1024
MAX_FILES = 1000
MAX_PATH_CHARS = 1024
MAX_DEPTH = 8

_CURATED = {f"{ROOT}/{name}": target for target, name in FILENAMES.items()}
_LOCK_NAME = ".lock"


class MemoryToolError(MnemoError):
    """A refused memory-tool command; the message is what the model is told."""


def _required(args: Mapping[str, Any], name: str, kind: type) -> Any:
    value = args.get(name)
    if value is None:
        raise MemoryToolError(f"{args.get('command')}: {name} is required")
    if not isinstance(value, kind) or isinstance(value, bool):
        raise MemoryToolError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
    return value


def _as_arguments(command: Any) -> dict[str, Any]:
    if hasattr(command, "model_dump"):  # an anthropic SDK command model
        command = command.model_dump(exclude_none=True)
    if not isinstance(command, Mapping):
        raise MemoryToolError(f"a memory command must be an object, got {type(command).__name__}")
    return dict(command)


class AnthropicMemoryTool:
    """Executes ``memory_20250818`` commands on ``memory`` (an open :class:`~mnemo.AgentMemory`);
    plain files go to ``files_dir`` (default: this user's directory under ``HOME/memory-files``)."""

    def __init__(self, memory: AgentMemory, *, files_dir: str | os.PathLike[str] | None = None) -> None:
        self.memory = memory
        if files_dir is None:
            user = memory.settings.user_id
            base = memory.settings.home / "memory-files"
            files_dir = base / "users" / path_segment(user) if user else base / "default"
        self.files_dir = Path(files_dir)

    @staticmethod
    def tool_param() -> dict[str, str]:
        """The tool definition for the Messages API ``tools`` list."""
        return {"type": TOOL_TYPE, "name": TOOL_NAME}

    # -- entry points -------------------------------------------------------------------------

    def handle_tool_use(self, block: Any) -> dict[str, Any]:
        """A ``tool_result`` content block answering ``block`` (a ``tool_use`` block or its dict)."""
        block_id = getattr(block, "id", None) or (block.get("id") if isinstance(block, Mapping) else None)
        payload = getattr(block, "input", None) if not isinstance(block, Mapping) else block.get("input")
        text, is_error = self.run(payload)
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block_id, "content": text}
        if is_error:
            result["is_error"] = True
        return result

    def run(self, command: Any) -> tuple[str, bool]:
        """``(text for the model, is_error)``: :meth:`execute`, with refusals as ``Error: ...`` text."""
        try:
            return self.execute(command), False
        except (MemoryToolError, InvalidArgument, MemoryOpError) as exc:
            return f"Error: {' '.join(str(exc).split())}", True
        except OSError as exc:
            return f"Error: {exc.strerror or type(exc).__name__}", True

    def execute(self, command: Any) -> str:
        """Run one command; return the text for the model or raise :class:`MemoryToolError` (or a
        curated :class:`~mnemo.MemoryOpError`)."""
        args = _as_arguments(command)
        name = args.get("command")
        if name not in COMMANDS:
            raise MemoryToolError(f"unknown command {name!r} (commands: {', '.join(COMMANDS)})")
        path = _check_path(_required(args, "path", str) if name != "rename" else _required(args, "old_path", str))
        if name == "rename":
            return self._rename(path, _check_path(_required(args, "new_path", str)))
        target = _CURATED.get(path)
        handler = getattr(self, f"_{name}_curated" if target else f"_{name}_file")
        return handler(target or path, args)

    # -- curated files ------------------------------------------------------------------------

    def _entries(self, target: str) -> tuple[str, ...]:
        """The target's entries as on disk now (another process may have edited them since this
        session's last write), without touching the session's frozen snapshot."""
        store = open_curated(self.memory.settings)
        store.load()
        failed = store.read_failure(target)
        if failed is not None:
            raise MemoryToolError(str(failed))
        return store.entries(target)

    def _edit(self, target: str, *operations: MemoryOp) -> str:
        # The model's edit: stamped with its provenance, and held for review when that is untrusted.
        call = MemoryCall(target, operations, batch=len(operations) > 1)
        outcome = self.memory._model_edit(call, {"via": "anthropic_memory"})
        if isinstance(outcome, ReviewItem):
            return HELD_MESSAGE
        return f"{outcome.message} {_CURATED_PATHS[target]}: {outcome.entry_count} entries [{outcome.usage}]"

    def _view_curated(self, target: str, args: Mapping[str, Any]) -> str:
        entries = self._entries(target)
        usage = usage_text(joined_length(entries), self.memory.store.char_limit(target))
        header = f"{_CURATED_PATHS[target]} (curated memory, {len(entries)} entries separated by '§' lines, {usage})"
        return _numbered(header, ENTRY_DELIMITER.join(entries), args.get("view_range"))

    def _create_curated(self, target: str, args: Mapping[str, Any]) -> str:
        text = _required(args, "file_text", str)
        new = parse_entries(text)
        ops: list[MemoryOp] = [Remove(entry) for entry in self._entries(target)]
        ops += [Add(entry) for entry in new]
        if not ops:
            return f"{_CURATED_PATHS[target]} is already empty"
        return self._edit(target, *ops)

    def _str_replace_curated(self, target: str, args: Mapping[str, Any]) -> str:
        old = _required(args, "old_str", str)
        new = _required(args, "new_str", str)
        if not old.strip():
            raise MemoryToolError("old_str must not be empty")
        hits = [entry for entry in self._entries(target) if old in entry]
        if len(hits) != 1:
            where = _CURATED_PATHS[target]
            raise MemoryToolError(
                f"old_str {old!r} is not in {where}"
                if not hits
                else f"old_str {old!r} appears in {len(hits)} entries of {where}; make it unique"
            )
        replaced = hits[0].replace(old, new, 1).strip()
        return self._edit(target, Replace(hits[0], replaced) if replaced else Remove(hits[0]))

    def _insert_curated(self, target: str, args: Mapping[str, Any]) -> str:
        _required(args, "insert_line", int)
        text = _required(args, "insert_text", str)
        return self._edit(target, Add(text.strip())) + " (curated entries have no line positions: added last)"

    def _delete_curated(self, target: str, args: Mapping[str, Any]) -> str:
        entries = self._entries(target)
        if not entries:
            return f"{_CURATED_PATHS[target]} is already empty"
        return self._edit(target, *(Remove(entry) for entry in entries))

    # -- plain files --------------------------------------------------------------------------

    def _real(self, path: str) -> Path:
        """The file for ``path``, with no symbolic link between the files directory and it."""
        relative = path[len(ROOT) :].lstrip("/")
        real = self.files_dir
        if os.path.islink(real):
            raise MemoryToolError("the memory files directory is a symbolic link; refusing to use it")
        for part in Path(relative).parts if relative else ():
            real = real / part
            if os.path.islink(real):
                raise MemoryToolError(f"{path} goes through a symbolic link; refusing")
        return real

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise writers across threads and processes (read-modify-write of one file, totals)."""
        self.files_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.files_dir / _LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _read(self, path: str) -> str:
        real = self._real(path)
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise MemoryToolError(f"the path {path} does not exist") from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise MemoryToolError(f"{path} is not a file")
            if info.st_size > MAX_FILE_BYTES:
                raise MemoryToolError(f"{path} is {info.st_size:,} bytes; at most {MAX_FILE_BYTES:,} can be read")
            raw = handle.read(MAX_FILE_BYTES + 1)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise MemoryToolError(f"{path} is not UTF-8 text") from None

    def _write(self, path: str, text: str, *, replacing: int = 0) -> None:
        """Check and write ``text`` to ``path`` atomically (caller holds the lock); ``replacing`` is the
        size of the file it replaces, for the directory's total."""
        if "\x00" in text:
            raise MemoryToolError("file content must not contain NUL bytes")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise MemoryToolError("file content is not valid UTF-8 text") from None
        if len(data) > MAX_FILE_BYTES:
            raise MemoryToolError(f"the file would be {len(data):,} bytes; at most {MAX_FILE_BYTES:,}")
        findings = scan(text)
        if findings:
            names = ", ".join(sorted({getattr(f, "category", str(f)) for f in findings}))
            raise MemoryToolError(f"content blocked by the threat scan ({names}); nothing was written")
        files, total = self._usage()
        if not replacing and files >= MAX_FILES:
            raise MemoryToolError(f"the memory directory already holds {files:,} files (at most {MAX_FILES:,})")
        if total - replacing + len(data) > MAX_TOTAL_BYTES:
            raise MemoryToolError(f"the memory directory would exceed {MAX_TOTAL_BYTES:,} bytes")
        real = self._real(path)
        real.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._real(path)  # re-checked: a directory created above cannot be a link, one found may be
        remove_stale_temp_files(real, 0)  # under the directory's lock no other write of it is under way
        atomic_write(real, data)

    def _usage(self) -> tuple[int, int]:
        files = total = 0
        for directory, dirnames, filenames in os.walk(self.files_dir):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                if not name.startswith("."):
                    files += 1
                    total += os.lstat(os.path.join(directory, name)).st_size
        return files, total

    def _view_file(self, path: str, args: Mapping[str, Any]) -> str:
        real = self._real(path)
        if path == ROOT or real.is_dir():
            return self._listing(path, real)
        return _numbered(path, self._read(path), args.get("view_range"))

    def _listing(self, path: str, real: Path) -> str:
        rows: list[str] = []
        if path == ROOT:
            for target, curated_path in _CURATED_PATHS.items():
                rows.append(f"{len(ENTRY_DELIMITER.join(self._entries(target)).encode()):>8}  {curated_path}")
        elif not real.is_dir():
            raise MemoryToolError(f"the path {path} does not exist")
        if real.is_dir():
            rows += _walk(real, path, levels=2)
        return f"Files and directories up to 2 levels deep in {path} (bytes, path):\n" + "\n".join(rows)

    def _create_file(self, path: str, args: Mapping[str, Any]) -> str:
        text = _required(args, "file_text", str)
        if path == ROOT:
            raise MemoryToolError(f"{ROOT} is a directory")
        with self._locked():
            real = self._real(path)
            if real.is_dir():
                raise MemoryToolError(f"{path} is a directory")
            existing = real.lstat().st_size if real.exists() else 0
            self._write(path, text, replacing=existing)
        return f"File {'overwritten' if existing else 'created'}: {path}"

    def _str_replace_file(self, path: str, args: Mapping[str, Any]) -> str:
        old = _required(args, "old_str", str)
        new = _required(args, "new_str", str)
        if not old:
            raise MemoryToolError("old_str must not be empty")
        with self._locked():
            text = self._read(path)
            count = text.count(old)
            if count != 1:
                raise MemoryToolError(
                    f"old_str {old!r} is not in {path}"
                    if not count
                    else f"old_str {old!r} appears {count} times in {path}; make it unique"
                )
            self._write(path, text.replace(old, new, 1), replacing=len(text.encode()))
        return f"The file {path} has been edited."

    def _insert_file(self, path: str, args: Mapping[str, Any]) -> str:
        line = _required(args, "insert_line", int)
        insert = _required(args, "insert_text", str)
        with self._locked():
            text = self._read(path)
            lines = text.splitlines(keepends=True)
            if not 0 <= line <= len(lines):
                raise MemoryToolError(f"insert_line must be 0..{len(lines)} for {path}, got {line}")
            if lines and not lines[-1].endswith("\n") and line == len(lines):
                lines[-1] += "\n"
            lines.insert(line, insert if insert.endswith("\n") else insert + "\n")
            self._write(path, "".join(lines), replacing=len(text.encode()))
        return f"Text inserted at line {line} of {path}."

    def _delete_file(self, path: str, args: Mapping[str, Any]) -> str:
        if path == ROOT:
            raise MemoryToolError(f"{ROOT} itself cannot be deleted")
        with self._locked():
            real = self._real(path)
            if real.is_dir():
                if any(real.iterdir()):
                    raise MemoryToolError(f"{path} is a directory that is not empty; delete its files first")
                real.rmdir()
            else:
                try:
                    real.unlink()
                except FileNotFoundError:
                    raise MemoryToolError(f"the path {path} does not exist") from None
            fsync_directory(real.parent)
        return f"Deleted {path}"

    def _rename(self, old: str, new: str) -> str:
        if old in _CURATED or new in _CURATED:
            raise MemoryToolError(
                f"{', '.join(_CURATED)} are mnemo's curated memory; they cannot be renamed or replaced by a rename"
            )
        if ROOT in (old, new):
            raise MemoryToolError(f"{ROOT} itself cannot be renamed")
        with self._locked():
            source, destination = self._real(old), self._real(new)
            if not source.exists():
                raise MemoryToolError(f"the path {old} does not exist")
            if destination.exists():
                raise MemoryToolError(f"{new} already exists")
            destination.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._real(new)
            os.rename(source, destination)
            fsync_directory(destination.parent)
            fsync_directory(source.parent)
        return f"Renamed {old} to {new}"


_CURATED_PATHS = {target: path for path, target in _CURATED.items()}


def _check_path(path: str) -> str:
    """``path`` normalised (no trailing slash) if it is safe to serve, else :class:`MemoryToolError`."""
    if "\x00" in path:
        raise MemoryToolError("path must not contain NUL bytes")
    if len(path) > MAX_PATH_CHARS:
        raise MemoryToolError(f"path is longer than {MAX_PATH_CHARS} characters")
    if "\\" in path:
        raise MemoryToolError(f"path {path!r} must use forward slashes only")
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise MemoryToolError(f"path {path!r} is outside {ROOT}; every path must start with {ROOT}/")
    parts = path[len(ROOT) :].rstrip("/").split("/")[1:] if path.rstrip("/") != ROOT else []
    for part in parts:
        if part in ("", ".", ".."):
            raise MemoryToolError(f"path {path!r} has an empty, '.' or '..' component")
        if part.startswith("."):
            raise MemoryToolError(f"path {path!r} names a hidden file; those are mnemo's own")
    if len(parts) > MAX_DEPTH:
        raise MemoryToolError(f"path {path!r} is nested deeper than {MAX_DEPTH} directories")
    return "/".join([ROOT, *parts])


def _numbered(title: str, text: str, view_range: Any) -> str:
    lines = text.splitlines()
    start, end = 1, len(lines)
    if view_range is not None:
        if (
            not isinstance(view_range, list)
            or len(view_range) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
        ):
            raise MemoryToolError("view_range must be [start, end] line numbers")
        start, end = view_range[0], (len(lines) if view_range[1] == -1 else view_range[1])
        if not 1 <= start <= max(end, 1) or end > len(lines):
            raise MemoryToolError(f"view_range {view_range} is outside lines 1..{len(lines)}")
    body = "\n".join(f"{number:>6}\t{lines[number - 1]}" for number in range(start, end + 1))
    return f"Here's the content of {title} with line numbers:\n{body}"


def _walk(directory: Path, shown: str, levels: int) -> list[str]:
    """``size  path`` rows for the visible files and directories ``levels`` deep under ``directory``."""
    rows: list[str] = []
    for child in sorted(directory.iterdir()):
        if child.name.startswith("."):
            continue
        name = f"{shown}/{child.name}"
        if child.is_symlink():
            continue  # never followed, never shown: mnemo did not create it
        if child.is_dir():
            rows.append(f"{'-':>8}  {name}/")
            if levels > 1:
                rows += _walk(child, name, levels - 1)
        else:
            rows.append(f"{child.lstat().st_size:>8}  {name}")
    return rows
