"""The cubin section reader behind get_const_mem_size(): figures ptxas -v no longer prints."""

from __future__ import annotations

from gpunb.backends.cuda import cubin

PTX_WITH_CONSTANTS = """
.version 7.8
.target sm_90
.address_size 64
.const .align 16 .b8 table[256];
.const .align 1 .b8 fmt[6] = {37, 108, 108, 100, 10, 0};
.visible .entry k(.param .u64 k_param_0)
{
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [k_param_0];
    cvta.to.global.u64 %rd2, %rd1;
    ld.const.u64 %rd3, [table+8];
    ld.const.u8 %rd4, [fmt+1];
    add.s64 %rd3, %rd3, %rd4;
    st.global.u64 [%rd2], %rd3;
    ret;
}
"""


def test_user_constant_bank_is_counted_not_the_parameters(ptxas):  # skips without ptxas
    from gpunb.backends.cuda.sass import assemble

    binary, _ = assemble(PTX_WITH_CONSTANTS, "sm_90")
    sizes = cubin.section_sizes(binary)
    assert any(name.startswith(".nv.constant0.") for name in sizes)  # the parameter bank
    assert cubin.user_constant_bytes(binary) >= 256 + 6


def test_not_an_elf_file_reads_as_empty():
    assert cubin.section_sizes(b"") == {}
    assert cubin.section_sizes(b"\x7fELF\x01\x01" + b"\0" * 100) == {}  # 32-bit
    truncated = b"\x7fELF\x02\x01" + b"\0" * 34 + (10**6).to_bytes(8, "little") + b"\0" * 30
    assert cubin.section_sizes(truncated) == {}
    assert cubin.user_constant_bytes(b"not a cubin") == 0
