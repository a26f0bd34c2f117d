"""Local paths and URLs alike: where every command that reads runs or writes outputs opens them.

Runs may live in shared storage (``inspect eval ... --log-dir s3://evals/logs``; lm-eval's output
folder uploaded with ``aws s3 sync`` or fsspec ``put``). A command argument is a *location*: a local
path, or a URL of any protocol fsspec knows (``s3://``, ``gs://``, ``az://``; ``file://`` is taken as
the local path it names). :func:`location` turns it into something with the ``pathlib`` interface
the readers use (``open``, ``read_text``, ``name``, ``parent``, ``with_name``, ``glob``): a plain
:class:`pathlib.Path` for a local path, so local behaviour is exactly what it always was, and a
``upath.UPath`` (fsspec underneath) for a URL.

Credentials come from each store's own chain (S3: environment, profile, instance role, and
``AWS_ENDPOINT_URL`` for an S3-compatible store); nothing here reads, prints or stores them. What
a store refuses becomes a :class:`~clinconsensus_tasks.errors.StorageError` naming the URL
(:func:`storage_errors`): a bucket that does not exist, refused credentials, a protocol whose
library is not installed (naming the package to install).

Finding the runs under a prefix is one listing (:func:`listing`, ``fs.find`` with details), not a
request per object.
"""

from __future__ import annotations

import io
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Union

from clinconsensus_tasks.errors import StorageError

# The package fsspec needs for each protocol (its own message names it too, in other words).
PROTOCOL_PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs",
                     "abfss": "adlfs", "adl": "adlfs", "hf": "huggingface_hub", "sftp": "paramiko", "ssh": "paramiko"}
LOCAL_PROTOCOLS = ("file", "local")
# Packages whose exceptions are a store's answer (or its absence), not a bug of ours: an unreachable
# endpoint (botocore's EndpointConnectionError), no credentials found (NoCredentialsError) ...
BACKEND_PACKAGES = ("botocore", "aiobotocore", "s3fs", "gcsfs", "google", "adlfs", "azure", "aiohttp", "fsspec")

Location = Union[Path, Any]  # a pathlib.Path, or a upath.UPath for a URL


def protocol_of(raw: str | os.PathLike[str]) -> str:
    """The URL protocol of ``raw`` (``s3``, ``gs`` ...), ``""`` for a local path."""
    text = os.fspath(raw)
    if "://" not in text:
        return ""
    from fsspec.core import split_protocol

    protocol = split_protocol(text)[0]
    return protocol or ""


def _is_upath(raw: Any) -> bool:
    return not isinstance(raw, (str, Path)) and hasattr(raw, "storage_options") and hasattr(raw, "fs")


def is_url(raw: Any) -> bool:
    """Whether ``raw`` names a remote location (a URL of a protocol other than ``file://``)."""
    if isinstance(raw, Path):
        return False
    if _is_upath(raw):
        return True  # :func:`location` makes a UPath of remote URLs only
    return protocol_of(raw) not in ("", *LOCAL_PROTOCOLS)


def location(raw: str | os.PathLike[str] | Any) -> Location:
    """A local path as :class:`pathlib.Path` (``file://`` URLs too), a URL as a ``UPath``; an
    unknown protocol or one whose library is missing is a :class:`StorageError` naming the URL."""
    if isinstance(raw, Path) or _is_upath(raw):
        return raw
    text = os.fspath(raw)
    protocol = protocol_of(text)
    if not protocol:
        return Path(text)
    if protocol in LOCAL_PROTOCOLS:
        from fsspec.core import strip_protocol

        return Path(strip_protocol(text))
    from upath import UPath

    with storage_errors(text):
        path = UPath(text)
        fs = path.fs  # the protocol's filesystem, made now: a missing library is an error here, naming the URL
        # The URL as the filesystem names what it lists (gcs:// is gs://, s3a:// is s3://, az:// is
        # abfs://): a folder typed one way is then found under the names its listing gives.
        canonical = fs.unstrip_protocol(path.path)
        if canonical != text and "::" not in text:  # a chained URL (simplecache::s3://...) is left as written
            path = UPath(canonical, **path.storage_options)
    return path


def same_file(a: Location, b: Location) -> bool:
    """Whether two locations (paths, or URLs of one filesystem) name the same file: local paths
    resolved, URLs compared by the path their filesystem strips them to, so a protocol's aliases and
    ``memory://x`` against ``memory:///x`` are the same."""
    if isinstance(a, Path) or isinstance(b, Path):
        return isinstance(a, Path) and isinstance(b, Path) and a.resolve() == b.resolve()
    return a.fs.protocol == b.fs.protocol and a.path.rstrip("/") == b.path.rstrip("/")


def describe(where: str, exc: BaseException) -> str:
    """What went wrong at ``where``, in words a user can act on (never a credential: the message
    is redacted by :class:`StorageError`)."""
    protocol = protocol_of(where) or "file"
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, ImportError):
        package = PROTOCOL_PACKAGES.get(protocol)
        install = f"pip install {package}" if package else "install the fsspec implementation it names"
        return f"{where}: {protocol}:// URLs need a library that is not installed ({install}): {text}"
    if isinstance(exc, ValueError) and _unknown_protocol(exc):
        return f"{where}: fsspec knows no protocol {protocol!r} ({text})"
    if isinstance(exc, PermissionError):
        return (f"{where}: the store refused access ({text}); check the credentials its standard chain finds (for S3: "
                "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, an instance role; AWS_ENDPOINT_URL for an "
                "S3-compatible store)")
    kind = type(exc).__name__
    if kind in ("EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError", "ClientConnectorError"):
        return (f"{where}: could not connect to the store ({text}); check the endpoint (AWS_ENDPOINT_URL for an "
                "S3-compatible store) and the network")
    if kind in ("NoCredentialsError", "PartialCredentialsError", "DefaultCredentialsError"):
        return f"{where}: no credentials found in the store's standard chain ({text})"
    if isinstance(exc, FileNotFoundError) and "bucket" in text.lower():
        return f"{where}: the bucket does not exist ({text})"
    if isinstance(exc, FileNotFoundError):
        return f"{where}: no such object or prefix ({text})"
    return f"{where}: the store could not be read ({type(exc).__name__}: {text})"


def _unknown_protocol(exc: ValueError) -> bool:
    """fsspec's "Protocol not known", universal-pathlib's "Unsupported filesystem"."""
    text = str(exc).lower()
    return "protocol not known" in text or "unsupported filesystem" in text


@contextmanager
def storage_errors(where: str | os.PathLike[str] | Any) -> Iterator[None]:
    """Turn what a remote store raises into a :class:`StorageError` naming ``where``; local paths'
    errors pass through unchanged (the commands' messages for them stay as they were)."""
    if not is_url(where):
        yield
        return
    try:
        yield
    except StorageError:
        raise
    except (OSError, ImportError) as exc:
        raise StorageError(describe(str(where), exc)) from exc
    except ValueError as exc:
        if not _unknown_protocol(exc):
            raise
        raise StorageError(describe(str(where), exc)) from exc
    except Exception as exc:
        if type(exc).__module__.split(".")[0] not in BACKEND_PACKAGES:
            raise
        raise StorageError(describe(str(where), exc)) from exc


def listing(folder: Any) -> dict[str, dict[str, Any]]:
    """Every object under a remote ``folder`` (a UPath), by URL, with its details: ONE listing of
    the prefix (S3: ListObjectsV2, paged by 1,000 keys), no request per object. ``{}`` when
    nothing is there; a URL naming one object lists that object."""
    with storage_errors(folder):
        fs = folder.fs
        found = fs.find(folder.path, detail=True)
    return {fs.unstrip_protocol(key): info for key, info in found.items() if info.get("type", "file") == "file"}


def remote_child(folder: Any, url: str) -> Any:
    """The ``UPath`` of ``url`` (found under ``folder``), with ``folder``'s storage options."""
    return type(folder)(url, **folder.storage_options)


def open_binary(path: Location) -> BinaryIO:
    """A local file opened for reading, or the object a URL names fetched whole in ONE request and
    read from memory (reading a remote file line by line through fsspec's buffered file costs
    several times the local read; one GET costs little more)."""
    path = location(path)
    if isinstance(path, Path):
        return path.open("rb")
    with storage_errors(path):
        return io.BytesIO(path.fs.cat_file(path.path))


def same_location(a: Any, b: Any) -> bool:
    """Whether two arguments name the same file or folder: :func:`same_file` of their locations, so
    ``file:///x`` is ``/x`` and a URL typed one way is the same URL typed another."""
    return same_file(location(a), location(b))


def file_sha256(path: str | os.PathLike[str] | Any) -> str:
    """The sha256 of a local file or of the object a URL names (an error names the URL)."""
    import hashlib

    where = location(path)
    with storage_errors(where):
        return hashlib.sha256(where.read_bytes()).hexdigest()


def is_remote_file(path: Any) -> bool:
    """Whether a remote ``path`` is an object (one request; an error names the URL)."""
    with storage_errors(path):
        return path.fs.isfile(path.path)


# -- outputs ----------------------------------------------------------------------------------------


def output_location(raw: str | os.PathLike[str] | Any) -> Location:
    """Where an output goes (``--output``, ``--csv``, ``--markdown``, ``--junit``): a local path, or a URL."""
    return location(raw)


def make_folder(folder: Location) -> None:
    """Create a local output folder (and its parents); a URL needs none (object stores have no
    folders, and creating a bucket is not an output's business)."""
    if isinstance(folder, Path):
        folder.mkdir(parents=True, exist_ok=True)


def write_text(target: Location, text: str, newline: str | None = None) -> None:
    """Write an output file, locally or to a URL (one upload); an error names the URL."""
    if isinstance(target, Path):
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("w", encoding="utf-8", newline=newline) as handle:
            handle.write(text)
        return
    with storage_errors(target):
        with target.open("w", encoding="utf-8", newline=newline) as handle:
            handle.write(text)


def write_bytes(target: Location, data: bytes) -> None:
    """:func:`write_text` for bytes."""
    if isinstance(target, Path):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return
    with storage_errors(target):
        with target.open("wb") as handle:
            handle.write(data)
