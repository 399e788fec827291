"""%%gpukernel option parsing: every documented option, and clear errors for wrong ones."""

import pytest

from gpunb.notebook.options import OptionError, parse_arch, parse_kernel_options


def test_defaults_pass_no_jit_options():
    opts = parse_kernel_options("")
    assert opts.jit_options() == {}
    assert opts.show == () and opts.arch is None


def test_every_option():
    opts = parse_kernel_options("--target cpu --arch sm_80 --show ptx,sass --lineinfo "
                                "--fastmath --no-cache --debug --max-registers 64")
    assert opts.jit_options() == {"target": "cpu", "lineinfo": True, "fastmath": True,
                                  "debug": True, "cache": False, "max_registers": 64}
    assert opts.arch == "sm_80" and opts.arch_cc == (8, 0)
    assert opts.show == ("ptx", "sass")


def test_show_all_expands_to_every_tab():
    assert parse_kernel_options("--show all").show == ("source", "types", "llvm", "ptx", "sass")
    assert parse_kernel_options("--show ptx --show types").show == ("ptx", "types")


@pytest.mark.parametrize("line, words", [
    ("--target gpu", "invalid choice"),
    ("--show asm", "--show asm"),
    ("--arch volta", "expected sm_XY"),
    ("--arch sm_999", "sm_999 is not an architecture gpunb writes PTX for; known: sm_50"),
    ("--arch sm_35", "sm_35 is not an architecture gpunb writes PTX for"),
    # a --threads typo was a DebuggerError at the first launch, "expected x[,y[,z]]"
    ("--trace --threads banana", "--threads 'banana': expected 'all', 'block x,y,z', 'warp W'"),
    ("--trace --threads 'warp x'", "--threads 'warp x': expected 'all'"),
    ("--trace --threads 5-2", "--threads '5-2': expected"),
    ("--trace --threads '1,2,3,4'", "--threads '1,2,3,4': expected"),
    ("--max-registers 4", "16..255"),
    ("--bogus", "unrecognized arguments"),
    ("--show 'ptx", "No closing quotation"),
])
def test_bad_options_say_what_is_wrong(line, words):
    with pytest.raises(OptionError) as info:
        parse_kernel_options(line)
    assert words in str(info.value)
    assert str(info.value).startswith("%%gpukernel")


@pytest.mark.parametrize("arch, cc", [("sm_90", (9, 0)), ("sm_86", (8, 6)), ("SM_75", (7, 5)),
                                      ("sm_90a", (9, 0)), ("sm_100", (10, 0)),
                                      ("sm_121", (12, 1))])
def test_parse_arch(arch, cc):
    assert parse_arch(arch) == cc


@pytest.mark.parametrize("line, words", [
    ("--timer x", "invalid choice: 'x'"),
    ("--repeat 0", "at least once"),
    ("--repeat", "expected one argument"),
    ("--bogus", "unrecognized arguments"),
])
def test_bad_profile_options_are_one_line_with_the_usage(line, words):
    from gpunb.notebook.profile import ProfileOptionError, parse_profile_options

    with pytest.raises(ProfileOptionError) as info:
        parse_profile_options(line)
    assert words in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith("%%gpuprofile: ")


def test_the_magics_options_are_listed_by_ipython():
    """IPython's magic_arguments parse both magics' lines and list their options."""
    from gpunb.notebook.options import gpukernel
    from gpunb.notebook.profile import gpuprofile

    assert "--racecheck" in gpukernel.__doc__ and "--sanitize" in gpukernel.__doc__
    assert "--ncu" in gpuprofile.__doc__
    assert parse_kernel_options("--max-registers 64 --no-cache").max_registers == 64


@pytest.mark.parametrize("spec", ["all", "warp 1", "block 2", "block 1,0,0", "0-63", "3",
                                  "3,1", "warp 0; block 1;0-7"])
def test_every_threads_form_the_debugger_reads_is_taken(spec):
    assert parse_kernel_options(f"--trace --threads '{spec}'").threads == spec
