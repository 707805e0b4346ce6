"""`raised_in`: an exception line counts only when the innermost traceback frame above it lies in
the named code, and the `other` signatures of data/engine_bugs.yaml that use it. Every log is
CPython's format strings filled in (Lib/traceback.py frames, the exception texts cited in the
signatures), not a line copied from a report."""

from __future__ import annotations

import pytest
from support.sources import known_causes

from hangar.diagnose import diagnose_text
from hangar.diagnose.frames import innermost_frame

SITE = "/opt/venv/lib/python3.12/site-packages"


def _traceback(frames: list[str], error: str, *, carets: bool = False) -> str:
    lines = ["Traceback (most recent call last):"]
    for path in frames:
        lines += [f'  File "{path}", line 42, in run', "    value = compute(x)"]
        if carets:  # Python 3.11+ marks the failing expression
            lines.append("            ^^^^^^^^^^")
    return "\n".join(lines + [error]) + "\n"


VLLM_FRAMES = [
    f"{SITE}/vllm/entrypoints/openai/api_server.py",
    f"{SITE}/vllm/v1/engine/core.py",
    f"{SITE}/vllm/platforms/cuda.py",
]


@pytest.mark.parametrize("carets", [False, True])
def test_unbound_local_in_vllm_is_named_as_a_vllm_bug(carets: bool) -> None:
    error = (
        "UnboundLocalError: cannot access local variable 'mem' where it is not associated "
        "with a value"
    )
    top = diagnose_text(_traceback(VLLM_FRAMES, error, carets=carets)).top
    assert top is not None
    assert (top.cause, top.signature) == ("other", "engine_unbound_local_variable")
    assert "hangar engines add" in top.fix


def test_python_310_wording_is_the_same_cause() -> None:
    error = "UnboundLocalError: local variable 'mem' referenced before assignment"
    top = diagnose_text(_traceback(VLLM_FRAMES, error)).top
    assert top is not None and top.signature == "engine_unbound_local_variable"


def test_the_same_error_raised_in_the_users_script_names_nothing() -> None:
    # the traceback passes through vLLM, but the innermost frame is the user's code
    frames = [*VLLM_FRAMES, "/home/me/serve.py"]
    error = "UnboundLocalError: cannot access local variable 'x' where it is not associated with a value"
    assert known_causes(_traceback(frames, error)) == ()  # at most: a failure, not a vLLM bug


def test_attribute_error_on_a_vllm_object_is_a_low_confidence_vllm_bug() -> None:
    frames = [*VLLM_FRAMES[:2], f"{SITE}/vllm/v1/attention/backends/mla/common.py"]
    error = "AttributeError: 'CutlassMLAImpl' object has no attribute '_workspace_buffer'"
    top = diagnose_text(_traceback(frames, error)).top
    assert top is not None
    assert (top.cause, top.signature) == ("other", "engine_internal_attribute_error")
    assert top.confidence < 0.5


@pytest.mark.parametrize(
    "error",
    [
        # a transformers config lacking a field: a version or checkpoint question
        "AttributeError: 'Qwen2Config' object has no attribute 'rope_theta'",
        # a build's op namespace: extension_abi_mismatch's
        "AttributeError: '_OpNamespace' '_C' object has no attribute 'rms_norm'",
    ],
)
def test_attribute_errors_that_are_not_vllm_bugs_are_not_named_as_such(error: str) -> None:
    causes = diagnose_text(_traceback(VLLM_FRAMES, error)).causes
    assert all(c.signature != "engine_internal_attribute_error" for c in causes)


def test_none_used_by_vllm_code() -> None:
    error = "TypeError: 'NoneType' object is not subscriptable"
    top = diagnose_text(_traceback(VLLM_FRAMES, error)).top
    assert top is not None and top.signature == "engine_internal_none_error"


def test_none_error_raised_in_another_package_names_nothing() -> None:
    frames = [*VLLM_FRAMES, f"{SITE}/outlines/fsm/guide.py"]
    error = "TypeError: 'NoneType' object is not subscriptable"
    assert known_causes(_traceback(frames, error)) == ()


def test_a_specific_signature_outranks_the_fallback() -> None:
    # a second package's frame and a pip conflict: dependency_mismatch, not a vLLM bug
    frames = [f"{SITE}/lmformatenforcer/integrations/vllm.py", f"{SITE}/vllm/v1/engine/core.py"]
    log = (
        "ERROR: pip's dependency resolver does not currently take into account all the "
        "packages that are installed. This behaviour is the source of the following "
        "dependency conflicts.\n"
        + _traceback(frames, "AttributeError: 'LLMEngine' object has no attribute 'tokenizer'")
    )
    top = diagnose_text(log).top
    assert top is not None and top.cause == "dependency_mismatch"


def test_innermost_frame_reads_only_the_last_few_lines() -> None:
    text = _traceback([f"{SITE}/vllm/a.py", "/home/me/b.py"], "").encode()
    assert innermost_frame(text) == "/home/me/b.py"
    far = text + b"x\n" * 5
    assert innermost_frame(far) is None
    assert innermost_frame(b"") is None


def test_an_invalid_raised_in_regex_names_the_file_signature_and_key() -> None:
    from hangar.diagnose.knowledge import build
    from hangar.errors import DataError

    text = (
        "schema_version: 1\nsignatures:\n  - id: s\n    cause: other\n    title: t\n"
        "    patterns: ['UnboundLocalError: x']\n    raised_in: '(vllm'\n    confidence: 0.5\n"
        "    explanation: e\n    fix: [f]\n"
    )
    with pytest.raises(DataError, match=r"bad\.yaml: signature 's', key 'raised_in': invalid"):
        build([("bad.yaml", text)])


def test_unbound_local_in_another_installed_package_is_that_packages_bug() -> None:
    frames = [*VLLM_FRAMES[:2], f"{SITE}/ray/_private/worker.py"]
    error = "UnboundLocalError: local variable 'info' referenced before assignment"
    top = diagnose_text(_traceback(frames, error)).top
    assert top is not None and top.signature == "library_unbound_local_variable"
    assert "pip install -U" in top.fix
