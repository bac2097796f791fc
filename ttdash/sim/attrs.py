"""How the profiler prints an op's attributes, and the kernels each kind of op runs."""

from __future__ import annotations

from .archspec import SimArch
from .model import TensorSpec, pad

__all__ = ["KERNELS", "compute_cfg", "format_attrs", "grid_str", "mem_cfg"]


def format_attrs(**kv: str) -> str:
    """Format attributes like the profiler: sorted keys, ``;`` instead of commas."""
    return "{" + "; ".join(f"'{k}': '{v}'" for k, v in sorted(kv.items())) + "}"


def grid_str(cores: int, gx: int) -> str:
    """A core-range set covering ``cores`` cores row by row on a grid ``gx`` cores wide."""
    rows, rem = divmod(cores, gx)
    if cores <= gx:
        return f"{{[(x=0;y=0) - (x={cores - 1};y=0)]}}"
    if rem == 0:
        return f"{{[(x=0;y=0) - (x={gx - 1};y={rows - 1})]}}"
    return f"{{[(x=0;y=0) - (x={gx - 1};y={rows - 1})]; [(x=0;y={rows}) - (x={rem - 1};y={rows})]}}"


def mem_cfg(t: TensorSpec, cores: int, gx: int) -> str:
    """The ``MemoryConfig(...)`` string of ``t`` (with a shard spec over ``cores`` if sharded)."""
    buffer, _, layout = t.memory.partition("_")
    if "SHARDED" not in layout:
        shard = "std::nullopt"
    else:
        _, _, y, x = t.shape
        w, z = t.shape[0], t.shape[1]
        rows = w * z * y
        if layout == "WIDTH_SHARDED":
            shape = (rows, pad(-(-x // cores)))
        elif layout == "HEIGHT_SHARDED":
            shape = (pad(-(-rows // cores)), x)
        else:
            shape = (pad(-(-rows // max(1, cores // gx))), pad(-(-x // gx)))
        shard = (
            f"ShardSpec(grid={grid_str(cores, gx)};shape={{{shape[0]}; {shape[1]}}};"
            f"orientation=ShardOrientation::ROW_MAJOR)"
        )
    return (
        f"MemoryConfig(memory_layout=TensorMemoryLayout::{layout};buffer_type=BufferType::{buffer};"
        f"shard_spec={shard};nd_shard_spec=std::nullopt;created_with_nd_shard_spec=0)"
    )


def compute_cfg(arch: SimArch, fid: str, *, approx: bool = False, fp32: bool = False, l1acc: bool = True) -> str:
    """The ``compute_kernel_config`` string for math fidelity ``fid`` on ``arch``."""
    if arch.name == "grayskull":
        return f"{arch.compute_config_name}(math_fidelity={fid};math_approx_mode={int(approx)})"
    return (
        f"{arch.compute_config_name}(math_fidelity={fid};math_approx_mode={int(approx)};"
        f"fp32_dest_acc_en={int(fp32)};packer_l1_acc={int(l1acc)};dst_full_sync_en=0;"
        f"throttle_level=ThrottleLevel::NO_THROTTLE)"
    )


#: (compute kernels, data-movement kernels) of each kernel family, by the name ops use.
_K = "ttnn/cpp/ttnn/operations"
_MM_COMPUTE = f"{_K}/matmul/device/kernels/compute/bmm_large_block_zm_fused_bias_activation.cpp"
KERNELS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "mm2d": (
        (_MM_COMPUTE,),
        (
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in0_sender_padding.cpp",
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in1_sender_writer_padding.cpp",
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in0_receiver.cpp",
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in1_receiver_writer_padding.cpp",
        ),
    ),
    "mm1d": (
        (_MM_COMPUTE,),
        (
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in0_sender_padding.cpp",
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in1_sender_writer_padding.cpp",
        ),
    ),
    "mmdram": (
        (_MM_COMPUTE,),
        (
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in0_sender_dram_sharded.cpp",
            f"{_K}/matmul/device/kernels/dataflow/reader_bmm_tile_layout_in1_sender_dram_sharded.cpp",
        ),
    ),
    "layernorm": (
        (f"{_K}/normalization/layernorm/device/kernels/compute/layernorm.cpp",),
        (
            f"{_K}/normalization/layernorm/device/kernels/dataflow/reader_unary_interleaved_ln.cpp",
            f"{_K}/normalization/layernorm/device/kernels/dataflow/writer_unary_interleaved_start_id_blocked.cpp",
        ),
    ),
    "binary": (
        (f"{_K}/eltwise/binary_ng/device/kernels/compute/eltwise_binary_no_bcast.cpp",),
        (
            f"{_K}/eltwise/binary_ng/device/kernels/dataflow/reader_interleaved_no_bcast.cpp",
            f"{_K}/eltwise/binary_ng/device/kernels/dataflow/writer_interleaved_no_bcast.cpp",
        ),
    ),
    "rotary": (
        (f"{_K}/experimental/transformer/rotary_embedding_llama/device/kernels/compute/rotary_embedding_llama.cpp",),
        (
            f"{_K}/experimental/transformer/rotary_embedding_llama/device/kernels/dataflow/reader_rotary_embedding_llama_interleaved_start_id.cpp",
            f"{_K}/eltwise/unary/device/kernels/dataflow/writer_unary_interleaved_start_id.cpp",
        ),
    ),
    "sdpa": (
        (f"{_K}/transformer/sdpa/device/kernels/compute/sdpa.cpp",),
        (
            f"{_K}/transformer/sdpa/device/kernels/dataflow/reader_interleaved.cpp",
            f"{_K}/transformer/sdpa/device/kernels/dataflow/writer_interleaved.cpp",
        ),
    ),
    "sdpa_decode": (
        (f"{_K}/transformer/sdpa_decode/device/kernels/compute/sdpa_flash_decode.cpp",),
        (
            f"{_K}/transformer/sdpa_decode/device/kernels/dataflow/reader_decode_all.cpp",
            f"{_K}/transformer/sdpa_decode/device/kernels/dataflow/writer_decode_all.cpp",
        ),
    ),
    "create_heads": (
        (),
        (f"{_K}/experimental/transformer/nlp_create_qkv_heads/device/kernels/dataflow/reader_tm_tile_layout_nlp_create_qkv_heads.cpp",
         f"{_K}/experimental/transformer/nlp_create_qkv_heads/device/kernels/dataflow/writer_tm_tile_layout_nlp_create_qkv_heads.cpp"),
    ),
    "create_heads_decode": (
        (),
        (f"{_K}/experimental/transformer/nlp_create_qkv_heads_decode/device/kernels/reader_tm_tile_layout_nlp_create_qkv_heads_decode.cpp",),
    ),
    "concat_heads": (
        (),
        (f"{_K}/experimental/transformer/nlp_concat_heads/device/kernels/dataflow/reader_tm_tile_layout_nlp_concat_heads.cpp",
         f"{_K}/eltwise/unary/device/kernels/dataflow/writer_unary_interleaved_start_id.cpp"),
    ),
    "concat_heads_decode": (
        (),
        (f"{_K}/experimental/transformer/nlp_concat_heads_decode/device/kernels/dataflow/reader_tm_tile_layout_nlp_concat_heads_decode.cpp",),
    ),
    "update_cache": (
        (f"{_K}/kv_cache/device/kernels/compute/update_cache.cpp",),
        (f"{_K}/experimental/paged_cache/device/kernels/dataflow/reader_update_cache_interleaved_start_id.cpp",
         f"{_K}/experimental/paged_cache/device/kernels/dataflow/writer_update_cache_interleaved_start_id.cpp"),
    ),
    "i2s": (
        (),
        (f"{_K}/data_movement/sharded/device/kernels/dataflow/reader_unary_sharded_blocks_interleaved_start_id.cpp",),
    ),
    "s2i": (
        (),
        (f"{_K}/data_movement/sharded/device/kernels/dataflow/writer_unary_sharded_blocks_interleaved_start_id.cpp",),
    ),
    "reshape": (
        (),
        (f"{_K}/data_movement/reshape_view/device/device/dataflow/reader_reshape_tiled.cpp",
         f"{_K}/data_movement/reshape_view/device/device/dataflow/writer_reshape_tiled.cpp"),
    ),
    "typecast": (
        (f"{_K}/copy/typecast/device/kernels/compute/eltwise_typecast.cpp",),
        (f"{_K}/eltwise/unary/device/kernels/dataflow/reader_unary_interleaved_start_id.cpp",
         f"{_K}/eltwise/unary/device/kernels/dataflow/writer_unary_interleaved_start_id.cpp"),
    ),
    "embeddings": (
        (),
        (f"{_K}/embedding/device/kernels/dataflow/embeddings.cpp",),
    ),
    "tilize": (
        (f"{_K}/data_movement/tilize/device/kernels/compute/tilize.cpp",),
        (f"{_K}/data_movement/tilize_with_val_padding/device/kernels/dataflow/reader_unary_pad_dims_split_rows_multicore.cpp",
         f"{_K}/eltwise/unary/device/kernels/dataflow/writer_unary_interleaved_start_id.cpp"),
    ),
    "untilize": (
        (f"{_K}/data_movement/untilize/device/kernels/compute/pack_untilize_variable_num_blocks.cpp",),
        (f"{_K}/data_movement/untilize/device/kernels/dataflow/reader_unary_start_id.cpp",
         f"{_K}/data_movement/untilize/device/kernels/dataflow/writer_unary_stick_layout_split_rows_multi_core.cpp"),
    ),
    "slice": (
        (),
        (f"{_K}/data_movement/slice/device/kernels/dataflow/reader_unary_unpad_dims_interleaved_start_id.cpp",
         f"{_K}/eltwise/unary/device/kernels/dataflow/writer_unary_interleaved_start_id.cpp"),
    ),
    "all_gather": (
        (),
        ("tt_metal/fabric/impl/kernels/tt_fabric_mux.cpp",
         f"{_K}/experimental/ccl/all_gather_async/device/kernels/minimal_default_writer.cpp",
         f"{_K}/experimental/ccl/all_gather_async/device/kernels/minimal_default_reader.cpp"),
    ),
    "reduce_scatter": (
        (f"{_K}/experimental/ccl/reduce_scatter_minimal_async/device/kernels/ring_reduction.cpp",),
        ("tt_metal/fabric/impl/kernels/tt_fabric_mux.cpp",
         f"{_K}/experimental/ccl/reduce_scatter_minimal_async/device/kernels/ring_reduce_scatter_minimal_async_writer.cpp",
         f"{_K}/experimental/ccl/reduce_scatter_minimal_async/device/kernels/ring_reduce_scatter_minimal_async_reader.cpp"),
    ),
}
