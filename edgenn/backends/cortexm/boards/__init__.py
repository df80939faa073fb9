"""Real boards for the Cortex-M backend: memory maps, an example application per board, and
running it in qemu-system-arm (the independent check next to the cycle-model emulator)."""

from edgenn.backends.cortexm.boards.app import app_files, app_sources
from edgenn.backends.cortexm.boards.board import BOARDS, GENERIC, Board, get_board

__all__ = ["BOARDS", "GENERIC", "Board", "app_files", "app_sources", "get_board"]
