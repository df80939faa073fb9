"""The operator conformance suite: single-operator TFLite models run by TFLite Micro (the
oracle) and by every edgenn backend that claims the operator (see ``spec.py``)."""
