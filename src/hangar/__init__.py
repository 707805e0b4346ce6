"""Hangar: make vLLM deployments boring.

The package layout follows the pipeline:

- ``models``     model facts (``ModelSpec``) from a directory, the hub or the embedded catalog
- ``hardware``   GPU facts (``GpuSpec``) from the catalog or NVML
- ``planning``   vLLM's startup rules (data) and the memory model -> a frozen ``Plan``
- ``diagnose``   log signatures -> root causes
- ``cli``        thin commands that call one library function and render the result
"""

__version__ = "0.1.0"
