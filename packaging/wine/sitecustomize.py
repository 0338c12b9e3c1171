"""Test-only, for packaging/check-windows.sh under Wine; never shipped in the Windows folder.

Wine 10's ucrtbase.dll leaves C99 complex functions (crealf, csqrt, cpow, ...) as stubs that
abort the process when called; numpy and scipy call them. Under Wine only, each such stub is
overwritten with a jump to the same function in wcomplex.dll (built from wcomplex.c, beside
this file). A function Wine implements is left alone, and on Windows nothing happens.
"""

import ctypes
import os
import struct

NAMES = """cabs cacos cacosh carg casin casinh catan catanh ccos ccosh cexp cimag clog clog10 conj cpow
cproj creal csin csinh csqrt ctan ctanh norm""".split()
SPECIAL = ["_Cbuild", "_FCbuild", "_LCbuild", "_Cmulcc", "_FCmulcc", "_LCmulcc", "_Cmulcr", "_FCmulcr", "_LCmulcr"]


def _under_wine() -> bool:
    try:
        return hasattr(ctypes.WinDLL("ntdll"), "wine_get_version")
    except (OSError, AttributeError):
        return False


def _is_wine_stub(code: bytes) -> bool:
    # winebuild's stub: sub $0x28,%rsp; lea name(%rip),%rcx; lea file(%rip),%rdx; call unimplemented
    return code[:4] == b"\x48\x83\xec\x28" and code[4:7] == b"\x48\x8d\x0d" and code[11:14] == b"\x48\x8d\x15" \
        and code[18:19] == b"\xe8"


def _patch() -> int:
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.GetProcAddress.restype = ctypes.c_void_p
    kernel32.GetProcAddress.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    kernel32.GetModuleHandleW.restype = ctypes.c_void_p
    kernel32.VirtualProtect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32,
                                        ctypes.POINTER(ctypes.c_uint32)]
    kernel32.FlushInstructionCache.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    ucrt = ctypes.WinDLL("ucrtbase")._handle
    replacements = ctypes.WinDLL(os.path.join(os.path.dirname(os.path.abspath(__file__)), "wcomplex.dll"))._handle
    patched = 0
    for name in [n + suffix for n in NAMES for suffix in ("", "f", "l")] + SPECIAL:
        stub = kernel32.GetProcAddress(ucrt, name.encode())
        target = kernel32.GetProcAddress(replacements, ("w_" + name).encode())
        if not stub or not target or not _is_wine_stub(ctypes.string_at(stub, 24)):
            continue
        jump = b"\xff\x25\x00\x00\x00\x00" + struct.pack("<Q", target)  # jmp *0(%rip); .quad target
        old = ctypes.c_uint32()
        if kernel32.VirtualProtect(stub, len(jump), 0x40, ctypes.byref(old)):  # PAGE_EXECUTE_READWRITE
            ctypes.memmove(stub, jump, len(jump))
            kernel32.VirtualProtect(stub, len(jump), old.value, ctypes.byref(old))
            kernel32.FlushInstructionCache(kernel32.GetCurrentProcess(), stub, len(jump))
            patched += 1
    return patched


if os.name == "nt" and _under_wine():
    _patch()
