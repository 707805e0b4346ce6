"""Fixtures of the real Slurm cluster (support.slurm_plugin), until tests/conftest.py registers
the plugin for the whole suite; the plugin shares one cluster per process either way."""

from support.slurm_plugin import ray_python, slurm_cluster

__all__ = ["ray_python", "slurm_cluster"]
