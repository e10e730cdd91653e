"""A PEP 517 build backend for this package, standard library only: the machines that build it have neither
setuptools nor wheel. It builds a pure-Python wheel of ``src/agent_scheduler`` and an sdist of the project."""

from __future__ import annotations

import base64
import hashlib
import io
import re
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = "agent_scheduler"
TAG = "py3-none-any"


def _project() -> dict[str, str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = {key: re.search(rf'^{key} = "([^"]+)"', text, re.M) for key in ("name", "version", "description")}
    return {key: match.group(1) for key, match in found.items() if match}


def _metadata() -> str:
    project = _project()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {project['name']}\n"
        f"Version: {project['version']}\n"
        f"Summary: {project['description']}\n"
        "License: Apache-2.0\n"
        "Requires-Python: >=3.10\n"
        "Provides-Extra: aws\n"
        'Requires-Dist: botocore>=1.29; extra == "aws"\n'
        "Description-Content-Type: text/markdown\n"
        f"\n{readme}"
    )


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"{path},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings: object = None) -> list[str]:
    """Nothing to install before building."""
    return []


def get_requires_for_build_sdist(config_settings: object = None) -> list[str]:
    """Nothing to install before building."""
    return []


def build_wheel(
    wheel_directory: str, config_settings: object = None, metadata_directory: object = None
) -> str:
    """Writes ``agent_scheduler-<version>-py3-none-any.whl`` into ``wheel_directory``; answers its file name."""
    version = _project()["version"]
    dist_info = f"{NAME}-{version}.dist-info"
    files: list[tuple[str, bytes]] = []
    package = ROOT / "src" / NAME
    for path in sorted(package.rglob("*")):
        if path.is_file() and (path.suffix == ".py" or path.name == "py.typed"):
            files.append((f"{NAME}/{path.relative_to(package).as_posix()}", path.read_bytes()))
    files.append((f"{dist_info}/METADATA", _metadata().encode("utf-8")))
    wheel = f"Wheel-Version: 1.0\nGenerator: agent_scheduler_build\nRoot-Is-Purelib: true\nTag: {TAG}\n"
    files.append((f"{dist_info}/WHEEL", wheel.encode("utf-8")))
    record = [_record_line(name, data) for name, data in files] + [f"{dist_info}/RECORD,,"]
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode("utf-8")))
    filename = f"{NAME}-{version}-{TAG}.whl"
    out = Path(wheel_directory)
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out / filename, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files:
            # A fixed date: the same sources make the same wheel.
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            archive.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    return filename


def build_sdist(sdist_directory: str, config_settings: object = None) -> str:
    """Writes ``agent_scheduler-<version>.tar.gz`` (sources, backend, tests) into ``sdist_directory``."""
    version = _project()["version"]
    base = f"{NAME}-{version}"
    filename = f"{base}.tar.gz"
    out = Path(sdist_directory)
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out / filename, "w:gz") as archive:
        for path in sorted(ROOT.rglob("*")):
            relative = path.relative_to(ROOT)
            if path.is_file() and "__pycache__" not in relative.parts and relative.parts[0] not in ("dist", "build"):
                archive.add(path, arcname=f"{base}/{relative.as_posix()}")
        pkg_info = _metadata().encode("utf-8")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        archive.addfile(info, io.BytesIO(pkg_info))
    return filename
