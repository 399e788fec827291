"""GPU architecture names (gpunb/foundation/arch.py): every spelling the CUDA toolchain takes is
read the same way everywhere (GPUNB_ARCH, %%gpukernel --arch, compile_ptx's cc, the occupancy
tables, the driver's JIT target), and anything else is refused saying what is expected."""

from __future__ import annotations

import pytest

from gpunb.foundation import config
from gpunb.foundation.arch import Arch, parse_arch


@pytest.mark.parametrize("text, arch", [
    ("sm_90", Arch(9, 0)), ("SM_90", Arch(9, 0)), ("sm_90a", Arch(9, 0, "a")),
    ("sm_100a", Arch(10, 0, "a")), ("sm_100f", Arch(10, 0, "f")), ("sm_120", Arch(12, 0)),
    ("compute_90a", Arch(9, 0, "a")), ("compute_80", Arch(8, 0)), ("86", Arch(8, 6)),
    ("9.0", Arch(9, 0)), ("10.3f", Arch(10, 3, "f")), (" sm_75 ", Arch(7, 5)),
    ((9, 0), Arch(9, 0)), ([8, 6], Arch(8, 6)), ((9, 0, "a"), Arch(9, 0, "a")),
])
def test_every_toolchain_spelling(text, arch):
    assert parse_arch(text) == arch
    assert parse_arch(arch.name) == arch and parse_arch(arch.key) == arch


def test_names_and_forms():
    arch = parse_arch("sm_90a")
    assert (arch.name, str(arch), arch.cc, arch.key) == ("sm_90a", "sm_90a", (9, 0), (9, 0, "a"))
    assert parse_arch("sm_100").key == (10, 0)


@pytest.mark.parametrize("bad", ["sm_9", "sm90x", "sm_80a", "sm_90f", "gfx90a", "", "sm_",
                                 (9,), (9, 0, "b"), (9, 0.5), ("9", "x"), None])
def test_what_is_not_an_architecture_is_refused(bad):
    with pytest.raises(ValueError, match="sm_|compute capability|suffix"):
        parse_arch(bad)


def test_gpunb_arch_takes_the_same_names(monkeypatch):
    monkeypatch.setenv("GPUNB_ARCH", "sm_90a")
    assert config.default_arch() == (9, 0, "a")
    monkeypatch.setenv("GPUNB_ARCH", "sm_100")
    assert config.default_arch() == (10, 0)
    monkeypatch.setenv("GPUNB_ARCH", "volta")
    with pytest.raises(ValueError, match="GPUNB_ARCH='volta'"):
        config.default_arch()


def test_the_other_readers_agree():
    from gpunb.backends.cuda.modules import parse_arch as jit_target
    from gpunb.backends.cuda.occupancy import limits_for
    from gpunb.jit.options import check_arch
    from gpunb.notebook.options import OptionError
    from gpunb.notebook.options import parse_arch as cell_arch

    for name in ("sm_90", "sm_90a", "9.0", "compute_90"):
        assert jit_target(name) == cell_arch(name) == (9, 0)
        assert limits_for(name) is limits_for((9, 0))
    assert check_arch((9, 0, "a")) == (9, 0, "a") and check_arch((10, 0, "f")) == (10, 0, "f")
    with pytest.raises(OptionError, match="sm_9"):
        cell_arch("sm_9")
    with pytest.raises(ValueError):
        check_arch((9, 0, "f"))  # a family suffix before sm_100


def test_check_known_takes_every_arch_gpunb_writes_ptx_for():
    from gpunb.foundation.arch import PTX_ISA_FOR_ARCH, check_known

    for key in PTX_ISA_FOR_ARCH:
        assert check_known(f"sm_{key}") == parse_arch(f"sm_{key}")
    assert check_known("sm_90a") == Arch(9, 0, "a") and check_known((12, 1, "f")).name == "sm_121f"


@pytest.mark.parametrize("typo", ["sm_999", "sm_77", "sm_35", "sm_130", (9, 9)])
def test_check_known_refuses_what_llvm_would_warn_about(typo):
    from gpunb.foundation.arch import check_known

    with pytest.raises(ValueError, match=r"not an architecture gpunb writes PTX for; known: "
                                         r"sm_50, .*sm_121"):
        check_known(typo)

