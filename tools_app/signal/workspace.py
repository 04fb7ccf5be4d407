"""Scratch arrays reused across the pieces of a long computation.

A cache build runs the same few array operations on thousands of equally sized pieces of a
channel. Writing their intermediate results into the same scratch memory each time, instead
of fresh arrays, keeps that memory in the processor cache and spares the allocator; the
numbers are those of the allocating computation, bit for bit.
"""
import math

import numpy as np


class Workspace:
    """Named scratch arrays, grown on demand and handed out as views.

    One workspace serves one thread: a view stays valid only until the same name is asked
    for again.
    """

    def __init__(self):
        self._buffers = {}

    def array(self, name, shape, dtype=np.float64):
        """Return an uninitialised array of ``shape`` backed by the scratch buffer ``name``."""
        size = math.prod(shape)
        buffer = self._buffers.get(name)
        if buffer is None or buffer.size < size or buffer.dtype != dtype:
            buffer = self._buffers[name] = np.empty(size, dtype=dtype)
        return buffer[:size].reshape(shape)


def scratch(workspace, name, shape, dtype=np.float64):
    """Return ``workspace.array(name, shape, dtype)``, or a fresh array without a workspace."""
    if workspace is None:
        return np.empty(shape, dtype=dtype)
    return workspace.array(name, shape, dtype)
