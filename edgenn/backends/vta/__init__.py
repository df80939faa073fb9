"""VTA-class accelerator backend: ISA, functional + timing simulator, GEMM schedules, and
whole int8 networks offloaded layer by layer.

``run_gemm`` (``edgenn.backends.vta.gemm``) runs one int8 GEMM under a schedule;
``compile_vta`` (``edgenn.backends.vta.executable``) compiles an int8 graph whose Conv2D and
FullyConnected layers run on the simulated accelerator (``--target vta``). docs/vta.md
describes the model, docs/vta_network.md the network offload.
"""
