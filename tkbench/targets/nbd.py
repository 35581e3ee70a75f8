"""A small NBD client (standard library only) for Unix-socket NBD servers.

tkbench uses it to learn the size of an NBD target and to purge it (a trim of
the whole range); the tests use it to read back data.  It speaks the fixed
newstyle handshake, negotiates with NBD_OPT_GO (falling back to
NBD_OPT_EXPORT_NAME for old servers), reads the block-size constraints, and
sends simple (not structured) requests one at a time.

Only ``nbd+unix:///[EXPORT]?socket=PATH`` URIs are accepted.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import struct
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tkbench.errors import DeviceError, InputError

# Handshake
NBDMAGIC = 0x4E42444D41474943  # "NBDMAGIC"
IHAVEOPT = 0x49484156454F5054  # "IHAVEOPT"
REPLY_MAGIC = 0x3E889045565A9
FLAG_FIXED_NEWSTYLE = 1 << 0
FLAG_NO_ZEROES = 1 << 1

OPT_EXPORT_NAME = 1
OPT_ABORT = 2
OPT_INFO = 6
OPT_GO = 7

REP_ACK = 1
REP_INFO = 3
REP_FLAG_ERROR = 1 << 31
_REP_ERRORS = {
    REP_FLAG_ERROR | 1: "unsupported option",
    REP_FLAG_ERROR | 2: "forbidden by policy",
    REP_FLAG_ERROR | 3: "invalid option",
    REP_FLAG_ERROR | 4: "not supported on this platform",
    REP_FLAG_ERROR | 5: "TLS required",
    REP_FLAG_ERROR | 6: "unknown export",
    REP_FLAG_ERROR | 7: "server shutting down",
    REP_FLAG_ERROR | 8: "block size negotiation required",
    REP_FLAG_ERROR | 9: "request too big",
}

INFO_EXPORT = 0
INFO_NAME = 1
INFO_DESCRIPTION = 2
INFO_BLOCK_SIZE = 3

# Transmission flags
TFLAG_HAS_FLAGS = 1 << 0
TFLAG_READ_ONLY = 1 << 1
TFLAG_SEND_FLUSH = 1 << 2
TFLAG_SEND_FUA = 1 << 3
TFLAG_ROTATIONAL = 1 << 4
TFLAG_SEND_TRIM = 1 << 5
TFLAG_SEND_WRITE_ZEROES = 1 << 6
TFLAG_CAN_MULTI_CONN = 1 << 8

# Transmission
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698
CMD_READ = 0
CMD_WRITE = 1
CMD_DISC = 2
CMD_FLUSH = 3
CMD_TRIM = 4

DEFAULT_MAX_PAYLOAD = 32 * 1024 * 1024  # the NBD spec's default maximum block size
DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class NbdAddress:
    """A parsed ``nbd+unix`` URI."""

    socket: str
    export: str = ""

    @property
    def uri(self) -> str:
        return f"nbd+unix:///{quote(self.export, safe='')}?socket={quote(self.socket, safe='/')}"

    @property
    def serial(self) -> str:
        """What tells this export from another, as a drive's serial does (the history's
        runs of "the same drive"): its name and its server's socket."""
        name = f"export {self.export!r}" if self.export else "default export"
        return f"{name} on {self.socket}"


@dataclass(frozen=True)
class ExportInfo:
    """What the server says about an export."""

    size: int
    min_block: int
    preferred_block: int
    max_block: int
    read_only: bool
    can_trim: bool
    can_flush: bool
    can_write_zeroes: bool
    can_multi_conn: bool
    rotational: bool
    block_size_advertised: bool
    description: str = ""  # NBD_INFO_DESCRIPTION, when the server sends one
    name: str = ""  # NBD_INFO_NAME: the export's own name (the default export's too)

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def parse_uri(uri: str) -> NbdAddress:
    """Parse ``nbd+unix:///[EXPORT]?socket=PATH``; InputError for anything else."""
    if not isinstance(uri, str) or not uri:
        raise InputError("empty NBD URI")
    try:
        parts = urlsplit(uri)
    except ValueError as exc:
        raise InputError(f"not an NBD URI: {uri!r} ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme != "nbd+unix":
        if scheme in ("nbd", "nbds", "nbds+unix", "nbd+vsock", "nbds+vsock"):
            raise InputError(
                f"unsupported NBD URI {uri!r}: only nbd+unix:///?socket=PATH "
                "(Unix socket, no TLS) is supported"
            )
        raise InputError(f"not an NBD URI: {uri!r} (expected nbd+unix:///?socket=PATH)")
    if parts.netloc:
        raise InputError(f"NBD URI {uri!r} must not name a host (use nbd+unix:///?socket=PATH)")
    if parts.fragment:
        raise InputError(f"NBD URI {uri!r} must not have a fragment")
    try:
        query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        raise InputError(f"malformed query in NBD URI {uri!r}") from None
    unknown = sorted(set(query) - {"socket"})
    if unknown:
        raise InputError(f"unsupported parameter {unknown[0]!r} in NBD URI {uri!r}")
    sockets = query.get("socket", [])
    if len(sockets) != 1 or not sockets[0]:
        raise InputError(f"NBD URI {uri!r} needs exactly one socket=PATH")
    path = parts.path
    export = unquote(path[1:] if path.startswith("/") else path)
    if len(export.encode()) > 4096:
        raise InputError("NBD export name longer than 4096 bytes")
    return NbdAddress(socket=sockets[0], export=export)


class NbdClient:
    """One connection in the transmission phase; use as a context manager."""

    def __init__(self, uri: str | NbdAddress, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.address = parse_uri(uri) if isinstance(uri, str) else uri
        self._sock: socket.socket | None = None
        self._cookie = 0
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(self.address.socket)
        except OSError as exc:
            sock.close()
            raise DeviceError(
                f"cannot connect to NBD server at {self.address.socket}: {exc.strerror or exc}"
            ) from None
        self._sock = sock
        try:
            self.info = self._handshake()
        except BaseException:
            self._close_socket()
            raise

    # -- plumbing -------------------------------------------------------------

    def _where(self) -> str:
        return f"NBD server at {self.address.socket}"

    def _recv(self, n: int) -> bytes:
        assert self._sock is not None
        buf = bytearray()
        try:
            while len(buf) < n:
                chunk = self._sock.recv(min(n - len(buf), 1 << 20))
                if not chunk:
                    raise DeviceError(f"{self._where()} closed the connection")
                buf += chunk
        except TimeoutError:
            raise DeviceError(f"{self._where()} did not answer in time") from None
        except OSError as exc:
            raise DeviceError(f"{self._where()}: {exc.strerror or exc}") from None
        return bytes(buf)

    def _send(self, data: bytes) -> None:
        assert self._sock is not None
        try:
            self._sock.sendall(data)
        except TimeoutError:
            raise DeviceError(f"{self._where()} did not accept data in time") from None
        except OSError as exc:
            raise DeviceError(f"{self._where()}: {exc.strerror or exc}") from None

    def _close_socket(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None

    # -- handshake ------------------------------------------------------------

    def _handshake(self) -> ExportInfo:
        magic, opt_magic, hflags = struct.unpack(">QQH", self._recv(18))
        if magic != NBDMAGIC:
            raise DeviceError(f"{self._where()} is not an NBD server (bad magic)")
        if opt_magic != IHAVEOPT:
            raise DeviceError(f"{self._where()} speaks only the oldstyle NBD handshake")
        if not hflags & FLAG_FIXED_NEWSTYLE:
            raise DeviceError(f"{self._where()} does not support the fixed newstyle handshake")
        cflags = FLAG_FIXED_NEWSTYLE | (hflags & FLAG_NO_ZEROES)
        self._no_zeroes = bool(hflags & FLAG_NO_ZEROES)
        self._send(struct.pack(">I", cflags))
        name = self.address.export.encode()
        data = (
            struct.pack(">I", len(name))
            + name
            + struct.pack(">HHHH", 3, INFO_BLOCK_SIZE, INFO_DESCRIPTION, INFO_NAME)
        )
        self._send(struct.pack(">QII", IHAVEOPT, OPT_GO, len(data)) + data)
        size = tflags = -1
        blocks: tuple[int, int, int] | None = None
        description = name_given = ""
        while True:
            rmagic, opt, rtype, length = struct.unpack(">QIII", self._recv(20))
            if rmagic != REPLY_MAGIC or opt != OPT_GO:
                raise DeviceError(f"{self._where()} sent a malformed option reply")
            if length > 1 << 24:
                raise DeviceError(f"{self._where()} sent an oversized option reply")
            payload = self._recv(length)
            if rtype == REP_ACK:
                break
            if rtype == REP_INFO and len(payload) >= 2:
                (itype,) = struct.unpack(">H", payload[:2])
                if itype == INFO_EXPORT and len(payload) >= 12:
                    size, tflags = struct.unpack(">QH", payload[2:12])
                elif itype == INFO_BLOCK_SIZE and len(payload) >= 14:
                    blocks = struct.unpack(">III", payload[2:14])
                elif itype == INFO_DESCRIPTION:
                    description = payload[2:].decode("utf-8", "replace")[:1024]
                elif itype == INFO_NAME:
                    name_given = payload[2:].decode("utf-8", "replace")[:4096]
                continue
            if rtype == REP_FLAG_ERROR | 1:  # OPT_GO unsupported: old server
                return self._export_name_fallback(name)
            if rtype & REP_FLAG_ERROR:
                what = _REP_ERRORS.get(rtype, f"error {rtype & 0x7FFFFFFF}")
                detail = payload.decode("utf-8", "replace").strip()
                export = f"export {self.address.export!r}" if self.address.export else "export"
                raise DeviceError(
                    f"{self._where()} refused the {export}: {what}"
                    + (f" ({detail})" if detail else "")
                )
            # other reply types (e.g. REP_SERVER) are ignored
        if size < 0:
            raise DeviceError(f"{self._where()} did not report the export size")
        return _make_info(size, tflags, blocks, description, name_given)

    def _export_name_fallback(self, name: bytes) -> ExportInfo:
        self._send(struct.pack(">QII", IHAVEOPT, OPT_EXPORT_NAME, len(name)) + name)
        size, tflags = struct.unpack(">QH", self._recv(10))
        if not self._no_zeroes:
            self._recv(124)
        return _make_info(size, tflags, None)

    # -- transmission ---------------------------------------------------------

    def _request(self, cmd: int, offset: int, length: int, payload: bytes = b"") -> bytes:
        if self._sock is None:
            raise DeviceError(f"{self._where()}: connection already closed")
        self._cookie += 1
        cookie = self._cookie
        self._send(struct.pack(">IHHQQI", REQUEST_MAGIC, 0, cmd, cookie, offset, length) + payload)
        if cmd == CMD_DISC:
            return b""
        magic, err, rcookie = struct.unpack(">IIQ", self._recv(16))
        if magic != SIMPLE_REPLY_MAGIC or rcookie != cookie:
            raise DeviceError(f"{self._where()} sent a malformed reply")
        if err:
            name = errno.errorcode.get(err, str(err))
            raise DeviceError(
                f"{self._where()}: {_CMD_NAMES.get(cmd, cmd)} of {length} bytes at offset "
                f"{offset} failed: {os.strerror(err)} ({name})"
            )
        if cmd == CMD_READ:
            return self._recv(length)
        return b""

    def _check_range(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self.info.size:
            raise InputError(
                f"range {offset}+{length} is outside the NBD export of {self.info.size} bytes"
            )

    def _chunk(self) -> int:
        step = min(self.info.max_block, DEFAULT_MAX_PAYLOAD)
        return max(step - step % max(self.info.min_block, 1), self.info.min_block)

    def pread(self, offset: int, length: int) -> bytes:
        """Read ``length`` bytes at ``offset`` (split into requests the server accepts)."""
        self._check_range(offset, length)
        out = bytearray()
        step = self._chunk()
        pos = offset
        while pos < offset + length:
            n = min(step, offset + length - pos)
            out += self._request(CMD_READ, pos, n)
            pos += n
        return bytes(out)

    def pwrite(self, data: bytes, offset: int) -> None:
        """Write ``data`` at ``offset``."""
        if self.info.read_only:
            raise DeviceError(f"{self._where()}: the export is read-only")
        self._check_range(offset, len(data))
        step = self._chunk()
        view = memoryview(data)
        for pos in range(0, len(data), step):
            chunk = bytes(view[pos : pos + step])
            self._request(CMD_WRITE, offset + pos, len(chunk), chunk)

    def trim(self, offset: int = 0, length: int | None = None) -> int:
        """Trim ``length`` bytes at ``offset`` (default: to the end); returns bytes trimmed."""
        if not self.info.can_trim:
            raise DeviceError(f"{self._where()}: the export does not support trim")
        if length is None:
            length = self.info.size - offset
        self._check_range(offset, length)
        # Trim carries no payload, but servers may still enforce the maximum
        # block size on it: stay within it and aligned to the minimum.
        step = self.info.max_block if self.info.block_size_advertised else 1 << 30
        align = max(self.info.min_block, 1)
        step = max(step - step % align, align)
        pos = offset
        end = offset + length
        while pos < end:
            n = min(step, end - pos)
            self._request(CMD_TRIM, pos, n)
            pos += n
        return length

    def flush(self) -> None:
        if not self.info.can_flush:
            return
        self._request(CMD_FLUSH, 0, 0)

    def close(self) -> None:
        """Disconnect politely (NBD_CMD_DISC)."""
        if self._sock is None:
            return
        with contextlib.suppress(DeviceError):
            self._request(CMD_DISC, 0, 0)
        self._close_socket()

    def __enter__(self) -> NbdClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


_CMD_NAMES = {CMD_READ: "read", CMD_WRITE: "write", CMD_FLUSH: "flush", CMD_TRIM: "trim"}


def _make_info(
    size: int,
    tflags: int,
    blocks: tuple[int, int, int] | None,
    description: str = "",
    name: str = "",
) -> ExportInfo:
    if blocks is not None:
        mn, pref, mx = blocks
        if mn < 1 or mn & (mn - 1) or pref < mn or mx < pref:
            blocks = None  # nonsense constraints: ignore them
    if blocks is None:
        mn, pref, mx = 1, 4096, DEFAULT_MAX_PAYLOAD
    has = bool(tflags & TFLAG_HAS_FLAGS)
    return ExportInfo(
        size=size,
        min_block=mn,
        preferred_block=pref,
        max_block=mx,
        read_only=has and bool(tflags & TFLAG_READ_ONLY),
        can_trim=has and bool(tflags & TFLAG_SEND_TRIM),
        can_flush=has and bool(tflags & TFLAG_SEND_FLUSH),
        can_write_zeroes=has and bool(tflags & TFLAG_SEND_WRITE_ZEROES),
        can_multi_conn=has and bool(tflags & TFLAG_CAN_MULTI_CONN),
        rotational=has and bool(tflags & TFLAG_ROTATIONAL),
        block_size_advertised=blocks is not None,
        description=description,
        name=name,
    )


def export_info(uri: str, timeout: float = DEFAULT_TIMEOUT) -> ExportInfo:
    """Size and capabilities of the export at ``uri``."""
    with NbdClient(uri, timeout) as client:
        return client.info


def trim(uri: str, offset: int = 0, length: int | None = None, timeout: float = 600.0) -> int:
    """Trim a range of the export (whole export by default), then flush; bytes trimmed."""
    with NbdClient(uri, timeout) as client:
        done = client.trim(offset, length)
        client.flush()
        return done
