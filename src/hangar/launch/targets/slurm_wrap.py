"""Containers on the Slurm nodes: apptainer wraps each command node.sh starts
(``apptainer exec``, the one-host target's argv builder), pyxis puts each srun step in the
image (slurm_render.py's docstring has the design)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from hangar.deploy.schema import Deployment
from hangar.launch.targets import container_argv as cargv
from hangar.launch.targets.base import RenderContext
from hangar.launch.targets.container import PASS_THROUGH_SECRETS
from hangar.launch.targets.slurm_job import (
    BATCH_EXPORTS,
    CONTAINER_ENV_FILE,
    GPU_VISIBILITY,
    container_of,
    is_local_model,
    mode_of,
    node_env,
    runtime_is,
    secret_env,
    slurm_of,
)
from hangar.launch.targets.slurm_templates import runtime


def hub_bound(d: Deployment) -> bool:
    """A container sees the HF hub cache through a bind unless the model is a local path."""
    return container_of(d) is not None and not is_local_model(d.model.id)


def hub_dir(d: Deployment) -> str:
    """The hub cache the deployment's [env] names ("" = resolved in the job the way
    huggingface_hub does: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub)."""
    if d.env.get("HF_HUB_CACHE"):
        return d.env["HF_HUB_CACHE"]
    return f"{d.env['HF_HOME']}/hub" if d.env.get("HF_HOME") else ""


def model_arg(d: Deployment) -> str:
    # apptainer binds a local model at the one-host target's path; pyxis at its own path
    local = is_local_model(d.model.id) and runtime_is(d, "apptainer")
    return cargv.IN_MODEL if local else d.model.id


def container_env(d: Deployment, ctx: RenderContext, mode: str) -> dict[str, str]:
    """What vLLM sees under apptainer --cleanenv: node.sh's exports with the job temp dir
    at /tmp (its bind), the run marker, this node's IP and the bound hub cache."""
    tmp = runtime("JOB_TMP")
    env = {k: v.replace(tmp, cargv.IN_TMP) for k, v in node_env(d, ctx, mode)}
    # vLLM's config and usage files default to $XDG_*_HOME under a home not bound (--no-home)
    env = {
        "XDG_CACHE_HOME": f"{cargv.IN_TMP}/.cache",
        "XDG_CONFIG_HOME": f"{cargv.IN_TMP}/.config",
        **env,
    }
    env["HANGAR_RUN_ID"] = ctx.run_id
    env.setdefault("VLLM_HOST_IP", runtime("VLLM_HOST_IP"))
    if hub_bound(d):
        env["HF_HUB_CACHE"] = cargv.IN_HF_HUB
    return env


def container_pass_env(d: Deployment, ctx: RenderContext) -> tuple[str, ...]:
    """Names whose values node.sh copies from its environment into the container: the
    secrets (from the submitting shell) and the GPUs Slurm gave the step."""
    return (*sorted(set(secret_env(d, ctx)) | set(PASS_THROUGH_SECRETS)), *GPU_VISIBILITY)


def _apptainer_mounts(d: Deployment, ctx: RenderContext) -> tuple[cargv.Mount, ...]:
    c = container_of(d)
    assert c is not None
    local = is_local_model(d.model.id)
    mounts = (
        cargv.Mount(src=runtime("JOB_TMP"), dst=cargv.IN_TMP),
        cargv.Mount(src=str(ctx.run_dir), dst=str(ctx.run_dir), ro=True),  # hangar_node.py
        *cargv.data_mounts(
            Path(d.model.id) if local else None,
            None if local else Path(runtime("HANGAR_HF_HUB")),
            c.binds,
        ),
    )
    return cargv.checked_mounts(mounts)


def apptainer_spec(
    d: Deployment, ctx: RenderContext, mode: str, extra_env: Mapping[str, str]
) -> cargv.ContainerSpec:
    """The one-host target's spec, as one node of the job needs it (argv: one builder)."""
    c, s = container_of(d), slurm_of(d)
    assert c is not None
    return cargv.ContainerSpec(
        runtime="apptainer",
        image=str(c.image),
        name=f"hangar-{ctx.run_id}",
        labels={},
        mounts=_apptainer_mounts(d, ctx),
        env={**container_env(d, ctx, mode), **extra_env},
        env_file=f"{runtime('JOB_TMP')}/{CONTAINER_ENV_FILE}",
        host=s.host or "",
        port=s.port,
        gpus="all",  # --nv: the step's GPUs, as Slurm gave them (CUDA_VISIBLE_DEVICES)
        ipc_host=False,
        shm_size=None,
        rootless=False,
        user=None,
        nvccli=c.nvccli,
        containall=c.containall,
        mount_home=c.mount_home,
        pull="never",
        extra_args=c.extra_args,
        python=c.python,
        command=(),
    )


def wrap(
    d: Deployment, ctx: RenderContext, argv: list[str], extra_env: Mapping[str, str] | None = None
) -> list[str]:
    """``argv`` (interpreter first) inside ``apptainer exec`` when the deployment says so;
    pyxis runs the whole node step in the image, so its commands stay as they are."""
    if not runtime_is(d, "apptainer"):
        return argv
    spec = apptainer_spec(d, ctx, mode_of(d), extra_env or {})
    return [*cargv.apptainer_prefix(spec), *argv]


def tmp_root(d: Deployment) -> str:
    """target.slurm.tmp_root as written (checked for bind syntax), else the job's own."""
    return slurm_of(d).tmp_root or runtime("TMP_ROOT")


def pyxis_args(d: Deployment, ctx: RenderContext) -> list[str]:
    """The srun options that put each node step in the image (identity binds: node.sh,
    the job temp root, the model, the hub cache and the user's binds keep their paths)."""
    c = container_of(d)
    if c is None or c.runtime != "pyxis":
        return []
    local = is_local_model(d.model.id)
    mounts = (
        cargv.Mount(src=str(ctx.run_dir), dst=str(ctx.run_dir), ro=True),
        cargv.Mount(src=tmp_root(d), dst=tmp_root(d)),
        *([cargv.Mount(src=d.model.id, dst=d.model.id, ro=True)] if local else []),
        *(
            []
            if local
            else [cargv.Mount(src=runtime("HANGAR_HF_HUB"), dst=runtime("HANGAR_HF_HUB"))]
        ),
        *(cargv.parse_bind(b) for b in c.binds),
    )
    names = (*BATCH_EXPORTS, *(() if local else ("HANGAR_HF_HUB",)), *container_pass_env(d, ctx))
    return list(
        cargv.pyxis_srun_args(
            str(c.image),
            cargv.checked_mounts(mounts),
            str(ctx.run_dir),
            names,
            c.mount_home,
            c.extra_args,
        )
    )
