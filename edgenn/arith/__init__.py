"""Integer arithmetic as TFLite Micro defines it (fixed-point multipliers, rounding shifts,
activation ranges): one implementation shared by the reference runtime, every backend, the
quantizer and the exporter. Depends only on ``edgenn.ir``."""
