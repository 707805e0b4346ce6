"""Surface forms of GPUs reaching containers and pods (data/gpu_plumbing.yaml), written from the
emitting sources (file and version in each signature's `sources`): Docker's daemon, the NVIDIA
Container Toolkit and libnvidia-container, CDI, podman, containerd, Apptainer, enroot/pyxis,
the NVIDIA device plugin, the GPU Operator and the Kubernetes scheduler. Every log below is the
source's format string with its variables filled in, not a line copied from a report. Near
misses share words with a signature but must not name its cause."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first, known_causes

from hangar.diagnose import diagnose_text

# docker run's wrapping of a failed prestart hook (runc + containerd shim)
HOOK = (
    "docker: Error response from daemon: failed to create task for container: failed to create "
    "shim task: OCI runtime create failed: runc create failed: unable to start container process: "
    "error during container init: error running hook #0: error running hook: exit status 1, "
    "stdout: , stderr: Auto-detected mode as 'legacy'\n"
)

CASES = [
    # moby daemon/errors.go incompatibleDeviceRequest (docker run --gpus, compose devices)
    (
        (
            'docker: Error response from daemon: could not select device driver "" with '
            "capabilities: [[gpu]].\n"
        ),
        "other",
    ),
    (
        (
            'Error response from daemon: could not select device driver "nvidia" with '
            "capabilities: [[gpu utility compute]]\n"
        ),
        "other",
    ),
    # moby daemon/runtime_unix.go getRuntime; 20.10 verifyPlatformContainerSettings
    ("Error response from daemon: unknown or invalid runtime name: nvidia\n", "other"),
    ("docker: Error response from daemon: Unknown runtime specified nvidia.\n", "other"),
    # pflag parseLongArg (docker < 19.03)
    ("unknown flag: --gpus\nSee 'docker run --help'.\n", "other"),
    # moby DevicesFromPath; podman addDevice
    (
        (
            "docker: Error response from daemon: error gathering device information while adding "
            'custom device "/dev/nvidia0": no such file or directory.\n'
        ),
        "other",
    ),
    (
        (
            "Error: /dev/nvidia-uvm is not a valid device: stat /dev/nvidia-uvm: no such file or "
            "directory\n"
        ),
        "other",
    ),
    # container-device-interface cache.go InjectDevices through docker, podman, the toolkit
    (
        (
            "docker: Error response from daemon: CDI device injection failed: unresolvable CDI "
            "devices nvidia.com/gpu=all\n"
        ),
        "other",
    ),
    ("Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=1\n", "other"),
    # libnvidia-container select_devices
    (HOOK + "nvidia-container-cli: device error: 3: unknown device: unknown.\n", "other"),
    (
        HOOK + "nvidia-container-cli: device error: GPU-5f1c7a2e-0b1d-4c3e-9a77-1d2e3f4a5b6c: "
        "unknown device: unknown.\n",
        "other",
    ),
    # toolkit constraints/binary.go (CSV / CDI modes) and libnvidia-container dsl.c driver>=
    (
        (
            "nvidia-container-runtime: error: requirements not met: unsatisfied condition: "
            "cuda>=12.8 (cuda=12.2)\n"
        ),
        "cuda_driver_mismatch",
    ),
    (
        HOOK + "nvidia-container-cli: requirement error: unsatisfied condition: driver>=550: "
        "unknown.\n",
        "cuda_driver_mismatch",
    ),
    # dsl.c arch / brand rules
    (
        HOOK + "nvidia-container-cli: requirement error: unsatisfied condition: arch>=8.0: "
        "unknown.\n",
        "other",
    ),
    # utils.c file_create via configure.c mount error
    (
        HOOK + "nvidia-container-cli: mount error: file creation failed: /var/lib/docker/overlay2/"
        "4f0e9a/merged/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1: file exists: unknown.\n",
        "other",
    ),
    # configure.c mount error, another path
    (
        HOOK + "nvidia-container-cli: mount error: stat failed: /usr/bin/nvidia-persistenced: "
        "no such file or directory: unknown.\n",
        "other",
    ),
    # nvcgo cgroup v2 AddDeviceRules; cgroup.c (< 1.8)
    (
        HOOK + "nvidia-container-cli: mount error: failed to add device rules: unable to find any "
        "existing device filters attached to the cgroup: bpf_prog_query(BPF_CGROUP_DEVICE) "
        "failed: operation not permitted: unknown.\n",
        "other",
    ),
    (
        HOOK + "nvidia-container-cli: container error: cgroup subsystem devices not found: "
        "unknown.\n",
        "other",
    ),
    # nvidia-container-runtime-hook main.go (CSV mode)
    (
        HOOK.replace("Auto-detected mode as 'legacy'", "")
        + "invoking the NVIDIA Container Runtime Hook directly (e.g. specifying the docker --gpus "
        "flag) is not supported. Please use the NVIDIA Container Runtime (e.g. specify the "
        "--runtime=nvidia flag) instead.: unknown.\n",
        "other",
    ),
    # toolkit oci/runtime_low_level.go
    (
        (
            "nvidia-container-runtime: error: failed to create NVIDIA Container Runtime: error "
            "constructing low-level runtime: no runtime binary found from candidate list: "
            "[docker-runc runc crun]\n"
        ),
        "other",
    ),
    # apptainer addGPUBinds, alone and with what fails next
    ("WARNING: Could not find any nv files on this host!\n", "other"),
    (
        (
            "WARNING: Could not find any nv libraries on this host!\n"
            "INFO 05-10 15:51:07 [__init__.py:248] No platform detected, vLLM is running on "
            "UnspecifiedPlatform\n"
            "RuntimeError: Failed to infer device type\n"
        ),
        "other",
    ),
    # enroot 98-nvidia.sh and common::runparts
    (
        (
            "[ERROR] Command not found: nvidia-container-cli, see "
            "https://github.com/NVIDIA/libnvidia-container\n"
            "[ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with return code 1\n"
        ),
        "other",
    ),
    (
        (
            "slurmstepd: error: pyxis: printing enroot log file:\n"
            "slurmstepd: error: pyxis:     [WARN] Kernel module nvidia_uvm is not loaded. Make sure "
            "the NVIDIA device driver is installed and loaded.\n"
            "slurmstepd: error: pyxis:     [ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with "
            "return code 1\n"
            "slurmstepd: error: pyxis: couldn't start container\n"
        ),
        "other",
    ),
    # pyxis enroot_container_create: a squashfs name without ./ imported as docker://
    (
        (
            "pyxis: importing docker image: vllm-0.9.sqsh\n"
            "slurmstepd: error: pyxis: child 4242 failed with error code: 1\n"
            "slurmstepd: error: pyxis: failed to import docker image\n"
        ),
        "other",
    ),
    # k8s-device-plugin factory.go (v0.14 / v0.17+) and the old NVML Go bindings
    (
        (
            "E0510 15:51:07.000000       1 factory.go:99] Failed to initialize NVML: "
            "ERROR_LIBRARY_NOT_FOUND.\n"
            "E0510 15:51:07.000000       1 factory.go:100] If this is a GPU node, did you set the "
            "docker default runtime to `nvidia`?\n"
            "I0510 15:51:07.000000       1 main.go:416] No devices found. Waiting indefinitely.\n"
        ),
        "other",
    ),
    (
        (
            "I0510 15:51:07.000000       1 factory.go:107] Detected non-NVML platform: could not load "
            "NVML library: libnvidia-ml.so.1: cannot open shared object file: No such file or "
            "directory\n"
            "E0510 15:51:07.000000       1 factory.go:118] Incompatible strategy detected auto\n"
            "E0510 15:51:07.000000       1 factory.go:119] If this is a GPU node, did you configure "
            "the NVIDIA Container Toolkit?\n"
        ),
        "other",
    ),
    ("Failed to initialize NVML: could not load NVML library.\n", "other"),
    # containerd CRI getSandboxRuntime
    (
        (
            "Warning  FailedCreatePodSandBox  kubelet  Failed to create pod sandbox: rpc error: code = "
            'Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured\n'
        ),
        "other",
    ),
    # kube-scheduler NodeResourcesFit inside FitError
    (
        (
            "Warning  FailedScheduling  default-scheduler  0/4 nodes are available: 4 Insufficient "
            "nvidia.com/gpu. preemption: 0/4 nodes are available: 4 No preemption victims found for "
            "incoming pod.\n"
        ),
        "other",
    ),
    # the same for a KubeRay worker pod
    (
        (
            "Events for pod vllm-raycluster-gpu-group-worker-x2k9f:\n"
            "Warning  FailedScheduling  default-scheduler  0/3 nodes are available: 1 Insufficient "
            "cpu, 3 Insufficient nvidia.com/gpu.\n"
            "kuberay-operator  RayCluster vllm-raycluster: worker pod pending\n"
        ),
        "ray_cluster",
    ),
    # TaintToleration (>= 1.25, and before)
    (
        "0/2 nodes are available: 2 node(s) had untolerated taint {nvidia.com/gpu: present}.\n",
        "other",
    ),
    (
        (
            "0/2 nodes are available: 2 node(s) had taint {nvidia.com/gpu: true}, that the pod didn't "
            "tolerate.\n"
        ),
        "other",
    ),
    # gpu-driver-container nvidia-driver
    (
        (
            "Stopping NVIDIA persistence daemon...\nUnloading NVIDIA driver kernel modules...\n"
            "nvidia_uvm           1540096  2\nnvidia              56717312  87 nvidia_uvm\n"
            "Could not unload NVIDIA driver kernel modules, driver is in use\n"
        ),
        "other",
    ),
    (
        "Resolving Linux kernel version...\nCould not resolve Linux kernel version\n",
        "other",
    ),
    # gpu-operator nvidia-validator
    (
        (
            'level=info msg="Error: error validating driver installation: error creating symlinks: '
            "failed to get device nodes: unable to get device name\\n\\nFailed to create symlinks "
            'under /dev/char that point to all possible NVIDIA character devices."\n'
        ),
        "other",
    ),
    # nvidia-smi's NVML "Unknown Error" in a container that worked before a daemon-reload
    (
        (
            "$ kubectl logs cuda-smi-loop\n"
            "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0a1b2c3d-4e5f-6789-abcd-ef0123456789)\n"
            "$ sudo systemctl daemon-reload\n"
            "$ kubectl logs cuda-smi-loop\n"
            "Failed to initialize NVML: Unknown Error\n"
        ),
        "other",
    ),
    # the NGC entrypoint banner, then the GPU workload failing
    (
        (
            "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n"
            "   Use the NVIDIA Container Toolkit to start this container with GPU support; see\n"
            "   https://docs.nvidia.com/datacenter/cloud-native/ .\n"
            "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
            "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n"
        ),
        "other",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


HEALTHY = (
    "INFO 05-10 15:51:07 [api_server.py:1090] Starting vLLM API server on http://0.0.0.0:8000\n"
    "INFO:     Application startup complete.\n"
)

# (log, cause the log must NOT be named with)
NEAR_MISSES = [
    (HEALTHY, "other"),
    # a healthy CPU-only use of an NGC image: the banner alone names nothing
    (
        "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n"
        "   Use the NVIDIA Container Toolkit to start this container with GPU support; see\n"
        "   https://docs.nvidia.com/datacenter/cloud-native/ .\n" + HEALTHY,
        "other",
    ),
    # NVML's "Unknown Error" with nothing that shows a container: not named as a lost cgroup
    ("Failed to initialize NVML: Unknown Error\n", "other"),
    # the image's CUDA is newer than the driver: cuda_driver_mismatch, never `other`
    (
        HOOK + "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please "
        "update your driver to a newer version, or use an earlier cuda container: unknown.\n",
        "other",
    ),
    (
        (
            "nvidia-container-runtime: error: requirements not met: unsatisfied condition: "
            "cuda>=12.8 (cuda=12.2)\n"
        ),
        "other",
    ),
    # a driver/library version mismatch through the hook stays cuda_driver_mismatch
    (
        HOOK + "nvidia-container-cli: initialization error: nvml error: driver/library version "
        "mismatch: unknown.\n",
        "other",
    ),
    # a CPU-only pod pending: not a GPU shortage
    ("0/3 nodes are available: 3 Insufficient cpu, 3 Insufficient memory.\n", "other"),
    # an unrelated taint
    (
        (
            "0/2 nodes are available: 2 node(s) had untolerated taint "
            "{node-role.kubernetes.io/control-plane: }.\n"
        ),
        "other",
    ),
    # a docker runtime name that is not NVIDIA's
    ("Error response from daemon: unknown or invalid runtime name: runsc\n", "other"),
    # pyxis given a path (./ or /): a local squashfs, not an import
    (
        "pyxis: imported docker image: ./vllm-0.9.sqsh\npyxis: creating container filesystem: "
        "vllm\n" + HEALTHY,
        "other",
    ),
    # a Slurm GPU shortage is slurm_resources, not the Kubernetes form
    (
        (
            "srun: error: Unable to allocate resources: Requested node configuration is not "
            "available\n"
        ),
        "other",
    ),
    # a vLLM flag the user typed (bad_cli_flag), not docker's missing --gpus
    ("vllm serve: error: unrecognized arguments: --gpus 2\n", "other"),
    # Ray's own resource shortage outside Kubernetes is not this file's Kubernetes form
    (
        (
            "Error: No available node types can fulfill resource request {'GPU': 8.0}. Add suitable "
            "node types to this cluster to resolve this issue.\n"
        ),
        "other",
    ),
]


@pytest.mark.parametrize(("log", "cause"), NEAR_MISSES)
def test_near_miss_does_not_name_the_cause(log: str, cause: str) -> None:
    causes = known_causes(log)
    assert all(c.cause != cause for c in causes), [(c.cause, c.confidence) for c in causes]


def test_the_image_cuda_requirement_is_a_driver_mismatch_through_both_toolkit_paths() -> None:
    legacy = diagnose_text(
        HOOK + "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please "
        "update your driver to a newer version, or use an earlier cuda container: unknown.\n"
    ).causes[0]
    csv = diagnose_text(
        "requirements not met: unsatisfied condition: cuda>=12.4 (cuda=12.2)\n"
    ).causes[0]
    assert legacy.cause == csv.cause == "cuda_driver_mismatch"


def test_a_container_that_lost_its_gpus_outranks_the_bare_nvml_reading() -> None:
    log = (
        "$ docker exec -it vllm nvidia-smi -L\n"
        "Failed to initialize NVML: Unknown Error\n"
        "$ sudo systemctl daemon-reload\n"
    )
    causes = diagnose_text(log).causes
    assert causes[0].signature == "container_lost_gpus_after_daemon_reload"
    assert causes[0].confidence >= 0.3
    assert any(c.cause == "cuda_driver_mismatch" for c in causes[1:])


def test_the_ngc_banner_lifts_the_downstream_no_driver_error_to_the_container() -> None:
    downstream = (
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
        "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n"
    )
    banner = (
        "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n"
    )
    assert diagnose_text(downstream).causes[0].cause == "cuda_driver_mismatch"
    assert diagnose_text(banner + downstream).causes[0].cause == "other"
