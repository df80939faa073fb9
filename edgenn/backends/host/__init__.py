"""The host backend: C compiled for the machine edgenn runs on, loaded with ctypes.

The run-time C compiler it builds its kernels with (sources + flags -> a cached shared object)
is :mod:`edgenn.cc`, below the backends because the SVM layer's host build uses it too.
"""
