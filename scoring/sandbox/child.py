"""The program that runs inside the sandbox: one per submission (docs/sandbox.md).

The runner (``scoring.sandbox.runner``) copies this file into the jail as
``runtime/sandbox_child.py`` (``layout.CHILD_FILE``) and starts it by that path as
``python -B -s /sandbox/runtime/sandbox_child.py CONFIG_JSON`` (CONFIG: the model directory
and kind, the code directory and entry module, whether to install the seccomp filter). It is
self-contained (stdlib only at import time) because it runs from that private read-only copy,
next to a copy of the ``scoring`` runtime subset (``layout.RUNTIME_MODULES``: the hosted model
wrapper, the baselines, the tokenizer set-up), never from the repository.

Protocol, one JSON object per line:

* child -> parent, start-up: ``{"event": "loaded", "seconds": s, "seccomp": bool}`` after the
  model loaded, then ``{"event": "ready", "seconds": s, "sentences": bool}`` after the user's
  module imported; or ``{"event": "load_error" | "import_error", "type", "message",
  "traceback"}`` and exit.
* parent -> child, per sample: ``{"id", "question", "context", "n_sentences"[, "sentences"]}``.
* child -> parent, per sample: ``{"id", "scores": [...], "seconds": s}`` or ``{"id", "error":
  {"type", "message", "traceback"}}`` or ``{"id", "not_a_list": "<type name>"}``.

The parent validates everything again: this file runs next to untrusted code and is trusted
only until that code is imported. Before the import, the protocol pipes are moved to private
descriptors and fd 0 / fd 1 are pointed at /dev/null / stderr, so ``print`` in the user's code
lands in the (capped) stderr buffer instead of corrupting the protocol.
"""
from __future__ import annotations

import codecs
import ctypes
import importlib
import importlib.machinery
import io
import json
import numbers
import os
import sys
import time
import tokenize
import traceback

MESSAGE_CHARS = 1000
TRACEBACK_CHARS = 4000

# --------------------------------------------------------------------------- seccomp

# Linux clone(2) namespace flags; a clone with any of them is refused.
CLONE_NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000,
                         0x20000000, 0x40000000)
# Refused outright with EPERM: namespaces, mounts (old and new API), debugging other processes,
# kernel keyrings, BPF, perf, userfaultfd, io_uring, the x86 LDT and I/O ports, the kernel log
# (large kernel attack surface nothing here needs).
DENIED_SYSCALLS = (
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
    "open_tree_attr", "fsopen", "fsmount", "fspick", "fsconfig", "mount_setattr", "listmount",
    "statmount", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "bpf",
    "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd", "open_by_handle_at",
    "name_to_handle_at", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "swapon", "swapoff", "reboot", "acct", "quotactl", "lookup_dcookie", "personality",
    "modify_ldt", "iopl", "ioperm", "syslog", "uselib",
)
# Numbers of the syscalls newer than some libseccomp releases' tables (2.5.4 does not know the
# last three): without them the names above would silently not be filtered. One table serves
# x86-64 and the generic (aarch64) numbering, which agree from 424 on.
NEW_SYSCALL_NUMBERS = {"mount_setattr": 442, "statmount": 457, "listmount": 458, "open_tree_attr": 467}
NEW_SYSCALL_MACHINES = ("x86_64", "aarch64")
# socket(2) / socketpair(2) families the child may use: Unix sockets (Python's own machinery) and
# IP (refused by the empty network namespace). Netlink, vsock, packet, AF_ALG and every other
# family answer EAFNOSUPPORT, as for a kernel built without them.
ALLOWED_SOCKET_FAMILIES = (1, 2, 10)   # AF_UNIX, AF_INET, AF_INET6
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_ACT_KILL_PROCESS = 0x80000000
SCMP_FLTATR_ACT_BADARCH = 2
SCMP_CMP_EQ = 4
SCMP_CMP_GT = 6
SCMP_CMP_MASKED_EQ = 7
EPERM = 1
ENOSYS = 38
EAFNOSUPPORT = 97


def scmp_act_errno(errno: int) -> int:
    return 0x00050000 | (errno & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


def load_libseccomp() -> ctypes.CDLL:
    """The soname first: the jail has no /etc/ld.so.cache, so ``find_library`` would run
    ldconfig, gcc and ld there (tens of milliseconds of every sandboxed run's start-up) before
    failing; it stays as the fallback for systems that name the library otherwise."""
    try:
        return ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        from ctypes.util import find_library  # noqa: PLC0415  (subprocess, shutil: 15 ms, fallback only)
        return ctypes.CDLL(find_library("seccomp") or "libseccomp.so", use_errno=True)


def install_seccomp() -> str:
    """Install the deny-list filter through libseccomp (ctypes; no Python package needed).

    A system call through another ABI than the native one (i386 ``int 0x80``, x32 numbers on
    x86-64) kills the whole process (libseccomp's default kills only the calling thread, which
    left a sample hanging to its timeout): nothing here ever uses them, and the filter's rules
    are written for native numbers. Returns ``""`` on success, else why not (the sandbox then
    relies on its other layers).
    """
    try:
        lib = load_libseccomp()
    except OSError as error:
        return f"libseccomp not loadable ({error})"
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(_ArgCmp)]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        return "seccomp_init failed"
    try:
        result = lib.seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)
        if result != 0:
            raise OSError(-result, "seccomp_attr_set(ACT_BADARCH, KILL_PROCESS)")

        def rule(action, syscall, *conditions):
            number = lib.seccomp_syscall_resolve_name(syscall.encode())
            if number < 0 and os.uname().machine in NEW_SYSCALL_MACHINES:
                number = NEW_SYSCALL_NUMBERS.get(syscall, -1)
            if number < 0:
                return  # not on this architecture / kernel headers
            array = (_ArgCmp * max(1, len(conditions)))(*conditions)
            result = lib.seccomp_rule_add_array(ctx, action, number, len(conditions), array)
            if result != 0:
                raise OSError(-result, f"seccomp_rule_add {syscall}")

        for syscall in DENIED_SYSCALLS:
            rule(scmp_act_errno(EPERM), syscall)
        for flag in CLONE_NAMESPACE_FLAGS:
            rule(scmp_act_errno(EPERM), "clone", _ArgCmp(0, SCMP_CMP_MASKED_EQ, flag, flag))
        # clone3 passes its flags in memory, which seccomp cannot read: ENOSYS makes glibc fall
        # back to clone(2), which the rules above inspect.
        rule(scmp_act_errno(ENOSYS), "clone3")
        # The family is an int: a caller can set the upper half of the 64-bit register, which
        # the kernel ignores. "> 10" on the whole register refuses every such value and every
        # family above AF_INET6; the few below it are refused one by one.
        refused = [family for family in range(0, 10) if family not in ALLOWED_SOCKET_FAMILIES]
        for syscall in ("socket", "socketpair"):
            rule(scmp_act_errno(EAFNOSUPPORT), syscall,
                 _ArgCmp(0, SCMP_CMP_GT, max(ALLOWED_SOCKET_FAMILIES), 0))
            for family in refused:
                rule(scmp_act_errno(EAFNOSUPPORT), syscall, _ArgCmp(0, SCMP_CMP_EQ, family, 0))
        result = lib.seccomp_load(ctx)
        if result != 0:
            return f"seccomp_load failed ({os.strerror(-result)})"
    except OSError as error:
        return str(error)
    finally:
        lib.seccomp_release(ctx)
    return ""


# --------------------------------------------------------------------------- protocol

class Channel:
    """The private protocol descriptors; fd 0/1 are handed to the user's code harmlessly."""

    def __init__(self):
        self.reader = os.fdopen(os.dup(0), "rb", buffering=0)
        self.writer = os.fdopen(os.dup(1), "wb", buffering=0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)  # print() of the user's code goes to the capped stderr buffer
        sys.stdin = open(os.devnull)
        sys.stdout = os.fdopen(os.dup(2), "w", buffering=1)
        self.pending = b""

    def send(self, message: dict) -> None:
        data = json.dumps(message, allow_nan=True, default=_unserialisable).encode() + b"\n"
        view = memoryview(data)
        while view:
            written = self.writer.write(view)
            view = view[written:]

    def receive(self) -> dict | None:
        while b"\n" not in self.pending:
            chunk = self.reader.read(1 << 16)
            if not chunk:
                return None
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)


def _unserialisable(value) -> str:
    # Reaches the parent as a string, which it rejects as "not a number".
    return f"<{type(value).__name__}>"


def _short(text: str, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit - 15] + " ...[truncated]"


def describe(error: BaseException, code_dir: str | None = None) -> dict:
    """Type, message and traceback from the first frame of the user's own code on (the
    runner's and importlib's frames are left out). Never any gold: the child has none."""
    frames: list[traceback.FrameSummary] = traceback.extract_tb(error.__traceback__)
    if code_dir:
        prefix = code_dir.rstrip("/") + "/"
        first = next((i for i, frame in enumerate(frames) if frame.filename.startswith(prefix)),
                     len(frames))
        frames = frames[first:]
    lines = traceback.format_list(frames) + traceback.format_exception_only(type(error), error)
    return {"type": type(error).__name__, "message": _short(str(error), MESSAGE_CHARS),
            "traceback": _short("".join(lines), TRACEBACK_CHARS)}


def as_score_list(result):
    """The interpreter's return value as a JSON-able list, or None if it is not a sequence."""
    if hasattr(result, "detach") and callable(result.detach):  # torch tensors
        result = result.detach().cpu()
    if hasattr(result, "tolist") and callable(result.tolist):  # numpy / torch
        result = result.tolist()
    if isinstance(result, (str, bytes, bytearray, dict)) or not hasattr(result, "__len__") \
            or not hasattr(result, "__getitem__"):
        return None
    values = []
    for value in result:
        if isinstance(value, bool):
            values.append(value)  # the parent rejects booleans
        elif isinstance(value, numbers.Real):
            values.append(float(value))
        elif hasattr(value, "item") and callable(value.item):  # 0-d arrays / tensors
            try:
                item = value.item()
            except Exception:  # noqa: BLE001
                item = value
            values.append(float(item) if isinstance(item, numbers.Real)
                          and not isinstance(item, bool) else item)
        else:
            values.append(value)
    return values


def accepts_sentences(function) -> bool:
    # inspect (5 ms at start-up) only for interpreter samples, never in a model run
    import inspect  # noqa: PLC0415
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "sentences" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
               or p.kind is p.VAR_KEYWORD for p in parameters)


def reap_children() -> None:
    """Collect exited children (e.g. the remains of a fork bomb) so that, as zombies, they
    do not keep counting against the process limits for the next samples."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Loads a submitted module from its .py source, always: never from a ``__pycache__`` entry
    (an unchecked-hash .pyc there would run instead of the source that was validated), and only
    as UTF-8 (a ``# coding:`` declaration of another encoding, which the upload check refuses,
    would make Python run other text than the check read)."""

    def get_code(self, fullname):
        data = self.get_data(self.path)
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        if codecs.lookup(encoding).name not in ("utf-8", "utf-8-sig"):
            raise ImportError(f"{self.path} declares the source encoding {encoding!r}; only UTF-8 "
                              "source is run", name=fullname, path=self.path)
        return self.source_to_code(data, self.path)


def add_code_dir(code_dir: str) -> None:
    """Make the submission importable, as source only and after every trusted path.

    Appended (not prepended) to ``sys.path``: the runtime's ``scoring`` copy, the standard
    library and site-packages always win over a module of the same name in the submission. Its
    directory and subdirectories get a finder that knows only ``.py`` sources: no bytecode, no
    extension modules (the upload check refuses both; this holds even if one slipped in)."""
    finder_for = importlib.machinery.FileFinder.path_hook((SourceOnlyLoader, [".py"]))
    prefix = code_dir.rstrip("/")

    def hook(path: str):
        if path == prefix or path.startswith(prefix + "/"):
            return finder_for(path)
        raise ImportError("not the submission's directory")

    sys.dont_write_bytecode = True  # as -B: never write (the code directory is read-only anyway)
    sys.path_hooks.insert(0, hook)
    sys.path_importer_cache.pop(code_dir, None)
    sys.path.append(code_dir)


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    channel = Channel()
    main_pid = os.getpid()
    # The runtime directory (the script's own, normally sys.path[0] already) comes first; the
    # submission's directory is added only after the model loaded (``add_code_dir``), so nothing
    # of it can shadow the model loader, torch or transformers while trusted code runs.
    if config["runtime_dir"] in sys.path:
        sys.path.remove(config["runtime_dir"])
    sys.path.insert(0, config["runtime_dir"])

    seccomp_problem = install_seccomp() if config.get("seccomp", True) else "disabled"

    # -- the model (trusted code: the copied scoring.models.hosted_model)
    started = time.perf_counter()
    try:
        # Deferred: it imports torch and transformers (seconds), only after the seccomp filter
        # is in place, and a failure must reach the parent as a load_error message. This is the
        # jail's private copy of scoring.models.hosted_model (runtime/scoring/ on sys.path;
        # this file runs there as a script, so by the copy's package name, layout.RUNTIME_PACKAGE).
        hosted_model = importlib.import_module("scoring.models.hosted_model")
        model = hosted_model.load_hosted_model(config["model_dir"], config["model_kind"])
    except BaseException as error:  # noqa: BLE001
        channel.send({"event": "load_error", **describe(error)})
        return 3
    channel.send({"event": "loaded", "seconds": time.perf_counter() - started,
                  "seccomp": not seccomp_problem, "seccomp_problem": seccomp_problem})

    # -- the user's module (untrusted from here on)
    started = time.perf_counter()
    add_code_dir(config["code_dir"])
    try:
        module = importlib.import_module(config["entry"])
        interpret = getattr(module, "interpret", None)
        if not callable(interpret):
            raise AttributeError(f"module {config['entry']!r} defines no callable interpret")
    except BaseException as error:  # noqa: BLE001
        if os.getpid() != main_pid:
            os._exit(0)
        channel.send({"event": "import_error", **describe(error, config["code_dir"])})
        return 4
    if os.getpid() != main_pid:  # a process forked at import time must not speak
        os._exit(0)
    with_sentences = accepts_sentences(interpret)
    channel.send({"event": "ready", "seconds": time.perf_counter() - started,
                  "sentences": with_sentences})

    while True:
        request = channel.receive()
        if request is None:
            return 0
        sample_id = request.get("id")
        kwargs = {}
        if with_sentences and "sentences" in request:
            kwargs["sentences"] = request["sentences"]
        started = time.perf_counter()
        try:
            result = interpret(model, request["question"], request["context"], **kwargs)
            scores = as_score_list(result)
        except BaseException as error:  # noqa: BLE001  (SystemExit too: it is the user's)
            if os.getpid() != main_pid:  # a forked copy of the user's code: vanish quietly
                os._exit(0)
            channel.send({"id": sample_id, "error": describe(error, config["code_dir"])})
            reap_children()
            continue
        if os.getpid() != main_pid:
            os._exit(0)
        seconds = time.perf_counter() - started
        reap_children()
        if scores is None:
            channel.send({"id": sample_id, "not_a_list": type(result).__name__,
                          "seconds": seconds})
        else:
            channel.send({"id": sample_id, "scores": scores, "seconds": seconds})


if __name__ == "__main__":
    try:
        code = main(sys.argv)
    except BaseException:  # noqa: BLE001  (a protocol failure: the parent reads stderr)
        traceback.print_exc()
        code = 5
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code)  # threads the user's code left running must not keep the sandbox alive
