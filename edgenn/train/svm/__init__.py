"""The on-device learning scenario of the SVM layer (``edgenn svm-demo``).

:mod:`~edgenn.train.svm.demo` runs it on the reference runtime and on the Cortex-M firmware
(:mod:`~edgenn.train.svm.demo_device`), :mod:`~edgenn.train.svm.plot` draws its figure. The
SVM itself (solver, layer, C sources) is :mod:`edgenn.svm`: it sits below the backends, which
build and run it; this package drives the backends, so it sits above them.
"""
