"""Mesh I/O: point caches (PC2, MDD) as ``(frames, vertices, 3)`` arrays.

Modules
-------
meshcache
    Read and write PC2 and MDD point caches.
"""

from .meshcache import CacheHeader, read_cache_header, read_mdd, read_pc2, write_mdd, write_pc2

__all__ = ["CacheHeader", "read_cache_header", "read_mdd", "read_pc2", "write_mdd", "write_pc2"]
