"""The container target: ``vllm serve`` in a Podman, Docker or Apptainer container here.

Handle: ``{"run_id", "runtime", "container", "image", "pid", "pgid"}``. The runtime's
client runs attached in its own process group with its output in ``server.log`` (so the
doctor reads a plain log); the container is named ``hangar-<run id>`` and labelled with
the run id and this Hangar's state dir, and stop/clean act only on a container whose
labels say so (never on a name alone). Apptainer has no container object: its
processes carry the run's marker like the local target's, and stop signals them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from hangar import proc
from hangar.deploy.schema import ContainerTargetSection, Deployment, is_secret_name
from hangar.engines.resolve import image_of
from hangar.errors import CommandFailed, HangarError
from hangar.launch import process
from hangar.launch.spec import BOOTSTRAP, entrypoint
from hangar.launch.targets import container_argv as cargv
from hangar.launch.targets.base import Observed, RenderContext, Rendered, Stopped
from hangar.launch.targets.local import LOG_NAME, _spawn
from hangar.models.hfcache import hub_cache_dir
from hangar.models.sources import expand_user
from hangar.paths import atomic_write_text, state_dir
from hangar.planning import serve

ENV_FILE = "container.env"
# Read from the caller's shell like the local target's vLLM would see them.
PASS_THROUGH_SECRETS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY")
_TIMEOUT = 60.0


class ContainerRuntimeMissing(HangarError):
    def __init__(self, runtime: str) -> None:
        super().__init__(
            f"{runtime} is not installed here",
            hint=f'install {runtime}, or set [target.container] runtime = "podman" | "docker"',
        )


def state_label() -> str:
    """Identifies this Hangar's state dir, so one user's clean never touches another's."""
    return hashlib.sha256(str(state_dir().resolve()).encode()).hexdigest()[:16]


def container_name(run_id: str) -> str:
    return f"hangar-{run_id}"


def section(d: Deployment) -> ContainerTargetSection:
    assert isinstance(d.target, ContainerTargetSection)
    return d.target


def local_model_dir(model_id: str) -> Path | None:
    path = expand_user(model_id)
    if model_id.startswith(("/", ".", "~")) or path.is_dir():
        return path.resolve()
    return None


def build_spec(
    d: Deployment, ctx: RenderContext, *, env: dict[str, str], uid: int, gid: int
) -> cargv.ContainerSpec:
    """The runtime-neutral spec; ``env``/``uid`` are the caller's (pure otherwise)."""
    c = section(d).container
    image = image_of(d)
    model_dir = local_model_dir(d.model.id)
    hub = None if model_dir else hub_cache_dir(env)
    inner_host = c.host if c.runtime == "apptainer" else "0.0.0.0"  # no netns in apptainer
    model_arg = cargv.IN_MODEL if model_dir else d.model.id
    options = serve.options_for(d, host=inner_host, port=c.port).model_copy(
        update={"model": model_arg}
    )
    command = (
        "-c",
        BOOTSTRAP,
        *entrypoint(ctx.engine),
        model_arg,
        *serve.serve_flags(options),
        *ctx.applied.args,
    )
    gpus = c.gpus or ("all" if d.resources.gpu else None)
    run_env = {
        **cargv.container_env(model_dir is not None, hub is not None),
        process.MARKER: ctx.run_id,
        **(
            {"CUDA_VISIBLE_DEVICES": gpus}
            if c.runtime == "apptainer" and gpus not in (None, "all")
            else {}
        ),
        **ctx.applied.env,
        **{k: v for k, v in d.env.items() if k not in ctx.secret_names},
    }
    return cargv.ContainerSpec(
        runtime=c.runtime,
        image=image,
        name=container_name(ctx.run_id),
        labels={
            cargv.LABEL_RUN: ctx.run_id,
            cargv.LABEL_STATE: state_label(),
            cargv.LABEL_IMAGE: image,
        },
        mounts=cargv.mounts_for(ctx.run_dir, ctx.engine_cache, model_dir, hub, c.binds),
        env=run_env,
        env_file=str(ctx.run_dir / ENV_FILE),
        host=c.host,
        port=c.port,
        gpus=gpus,
        ipc_host=c.ipc_host,
        shm_size=c.shm_size,
        rootless=uid != 0,
        user=f"{uid}:{gid}" if c.runtime == "docker" and uid != 0 else None,
        nvccli=c.nvccli,
        containall=c.containall,
        pull=c.pull,
        extra_args=c.extra_args,
        python=c.python,
        command=command,
    )


def _url(host: str, port: int) -> str:
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def _inspect(runtime: str, ref: str) -> dict[str, str] | None:
    """id, status, exit code and labels of one container; None when it does not exist."""
    fmt = (
        "{{.Id}}|{{.State.Status}}|{{.State.ExitCode}}|"
        f'{{{{index .Config.Labels "{cargv.LABEL_RUN}"}}}}|'
        f'{{{{index .Config.Labels "{cargv.LABEL_STATE}"}}}}'
    )
    try:
        out = proc.run(
            [runtime, "container", "inspect", "--format", fmt, ref], timeout=_TIMEOUT, check=False
        )
    except CommandFailed as exc:  # not installed any more
        raise ContainerRuntimeMissing(runtime) from exc
    if out.returncode != 0 or "|" not in out.stdout:
        return None
    cid, status, code, run, state = (out.stdout.strip().split("|") + [""] * 5)[:5]
    return {"id": cid, "status": status, "code": code, "run": run, "state": state}


def _ours(info: dict[str, str] | None, run_id: str) -> bool:
    return info is not None and info["run"] == run_id and info["state"] == state_label()


class ContainerTarget:
    kind = "container"

    def render(self, d: Deployment, ctx: RenderContext) -> Rendered:
        spec = build_spec(d, ctx, env=dict(os.environ), uid=os.getuid(), gid=os.getgid())
        return Rendered(
            kind=self.kind,
            argv=cargv.runtime_argv(spec),
            env=spec.env,
            secret_env=ctx.secret_names,
            base_url=_url(spec.host, spec.port),
            served_name=d.model.name_for_clients,
            applied=ctx.applied,
        )

    def submit(self, rendered: Rendered, ctx: RenderContext, env: dict[str, str]) -> dict[str, Any]:
        runtime = rendered.argv[0]
        names = (*rendered.secret_env, *PASS_THROUGH_SECRETS)
        values = {n: env[n] for n in names if n in env}
        if runtime == "apptainer":  # its --env map cannot carry a ','
            values.update({k: v for k, v in rendered.env.items() if "," in v})
        text = cargv.env_file_text(runtime, values)
        atomic_write_text(ctx.run_dir / ENV_FILE, text, mode=0o600)
        # The client needs no secret: they reach the container through the file only.
        client_env = {k: v for k, v in env.items() if k not in values and not is_secret_name(k)}
        child = _spawn(rendered.argv, {**client_env, process.MARKER: ctx.run_id}, ctx.run_dir)
        image = _image_in(rendered.argv)
        return {
            "run_id": ctx.run_id,
            "runtime": runtime,
            "container": container_name(ctx.run_id),
            "image": image,
            "pid": child.pid,
            "pgid": child.pid,
        }

    def status(self, handle: dict[str, Any], run_dir: Path) -> Observed:
        runtime, run_id = str(handle.get("runtime")), str(handle.get("run_id"))
        client = process.own_child_alive(handle.get("pid")) or bool(
            process.run_processes(run_id, handle.get("pgid"))
        )
        if runtime == "apptainer":
            return Observed(phase="running") if client else _exited("apptainer exited")
        info = _inspect(runtime, str(handle.get("container")))
        if not _ours(info, run_id):
            if client:  # the client is still creating it (pulling, setting up mounts)
                return Observed(phase="running", reason="creating the container")
            return Observed(phase="gone", reason="the container does not exist (see server.log)")
        assert info is not None
        # The runtime copied the env file into the container's config when it created
        # it: the secrets need not stay on disk.
        (run_dir / ENV_FILE).unlink(missing_ok=True)
        if info["status"] in ("created", "configured", "running", "paused", "initialized"):
            return Observed(phase="running")
        return _exited(f"container {info['status']} with exit code {info['code']}", info["code"])

    def logs(self, handle: dict[str, Any], run_dir: Path) -> list[Path]:
        return [run_dir / LOG_NAME]

    def stop(self, handle: dict[str, Any], run_dir: Path, grace_s: float) -> Stopped:
        runtime, run_id = str(handle.get("runtime")), str(handle.get("run_id"))
        try:
            if runtime == "apptainer":
                count, killed = process.terminate(run_id, handle.get("pgid"), grace_s)
                return Stopped(signalled=count, forced=killed, detail=f"{count} processes")
            return _stop_container(handle, runtime, run_id, grace_s)
        finally:
            (run_dir / ENV_FILE).unlink(missing_ok=True)


def _exited(reason: str, code: str = "0") -> Observed:
    return Observed(phase="exited" if code == "0" else "failed", reason=reason)


def _image_in(argv: tuple[str, ...]) -> str | None:
    """The image, from the label every OCI run carries (apptainer: none to purge)."""
    prefix = f"{cargv.LABEL_IMAGE}="
    return next((a[len(prefix) :] for a in argv if a.startswith(prefix)), None)


def _stop_container(handle: dict[str, Any], runtime: str, run_id: str, grace_s: float) -> Stopped:
    info = _inspect(runtime, str(handle.get("container")))
    if not _ours(info, run_id):
        count, _ = process.terminate(run_id, handle.get("pgid"), 5)
        return Stopped(signalled=count, forced=False, detail="no container of this run left")
    assert info is not None
    grace = str(max(0, int(grace_s)))
    proc.run([runtime, "stop", "-t", grace, info["id"]], timeout=grace_s + _TIMEOUT, check=False)
    after = _inspect(runtime, info["id"])
    killed = after is not None and after["code"] == "137"  # SIGKILL after the grace period
    proc.run([runtime, "rm", "-f", info["id"]], timeout=_TIMEOUT, check=False)
    process.terminate(run_id, handle.get("pgid"), 5)  # the attached client, if it lingers
    how = "killed after the grace period" if killed else "stopped"
    return Stopped(
        signalled=1, forced=killed, detail=f"container {handle.get('container')} {how}, removed"
    )


def remove_image(handle: dict[str, Any]) -> str:
    """``hangar stop --purge``: remove the run's image (refused by the runtime while another
    container uses it)."""
    runtime, image = str(handle.get("runtime")), handle.get("image")
    if runtime == "apptainer" or not image:
        return "no image to remove (apptainer images are files: delete the .sif yourself)"
    done = proc.run([runtime, "rmi", str(image)], timeout=_TIMEOUT * 5, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        return f"image {image} kept: {tail[0]}"
    return f"image {image} removed"


def own_containers(runtime: str) -> list[dict[str, str]]:
    """Containers carrying this Hangar's state label: id, name, state, run id."""
    fmt = f'{{{{.ID}}}}|{{{{.Names}}}}|{{{{.State}}}}|{{{{index .Labels "{cargv.LABEL_RUN}"}}}}'
    try:
        done = proc.run(
            [
                runtime,
                "ps",
                "-a",
                "--filter",
                f"label={cargv.LABEL_STATE}={state_label()}",
                "--format",
                fmt,
            ],
            timeout=_TIMEOUT,
            check=False,
        )
    except CommandFailed:  # runtime not installed
        return []
    rows = []
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        cid, name, state, run = (line.split("|") + [""] * 4)[:4]
        if cid and run:
            # podman 4.3 prints "Exited (0) 2 seconds ago" for .State: its first word counts
            word = (state.split() or [""])[0].lower()
            rows.append({"id": cid, "name": name, "state": word, "run": run})
    return rows


def remove_container(runtime: str, cid: str) -> None:
    proc.run([runtime, "rm", cid], timeout=_TIMEOUT, check=False)
