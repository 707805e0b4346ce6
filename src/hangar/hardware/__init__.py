"""Hardware facts: the GPU catalog (data), forgiving name lookup and NVML detection."""
