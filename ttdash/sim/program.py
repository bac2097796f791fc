"""One iteration of the simulated transformer as op templates: prologue, decoder layers, epilogue."""

from __future__ import annotations

import math

import numpy as np

from .archspec import SimArch
from .attrs import compute_cfg, mem_cfg
from .builder import OpBuilder
from .model import (
    CCL,
    DATA_MOVEMENT,
    ELTWISE,
    SDPA,
    TILE,
    ModelConfig,
    Program,
    TensorSpec,
    pad,
    tensor,
)

__all__ = ["build_program"]


def build_program(cfg: ModelConfig, arch: SimArch, devices: int, rng: np.random.Generator) -> Program:
    """Lay out one iteration of the model as op templates (shapes are per device)."""
    b = OpBuilder(cfg, arch, devices, rng)
    d = max(1, devices)
    gx = arch.grid[0]
    H, hd = cfg.hidden, cfg.head_dim
    nh = -(-cfg.heads // d)
    nkv = -(-cfg.kv_heads // d)
    qkv_n = (nh + 2 * nkv) * hd
    ffn = pad(-(-cfg.ffn // d))
    M, m = cfg.seq, cfg.seq_logical
    decode = cfg.decode
    dec_mem = "L1_WIDTH_SHARDED"
    act_mem = dec_mem if decode else "DRAM_INTERLEAVED"
    w_mem = "DRAM_WIDTH_SHARDED" if decode and arch.dram_sharded_cores else "DRAM_INTERLEAVED"
    use_dram_sharded = decode and bool(arch.dram_sharded_cores)
    wdt, mdt = cfg.weight_dtype, cfg.mlp_dtype
    fid_w = "HiFi2" if wdt != "BFLOAT4_B" else "LoFi"
    fid_mlp = "LoFi" if mdt == "BFLOAT4_B" else "HiFi2"
    fid_attn = "HiFi4" if rng.random() < 0.5 else "HiFi2"

    def act(x: int, mem: str = act_mem, dtype: str = "BFLOAT16", rows: int = M, lrows: int | None = None) -> TensorSpec:
        return tensor(1, 1, rows, x, dtype=dtype, memory=mem, logical_y=m if lrows is None else lrows)

    def weight(k: int, n: int, dtype: str = wdt) -> TensorSpec:
        return tensor(1, 1, k, n, dtype=dtype, memory=w_mem)

    seq_tiles = M // TILE
    norm_cores = min(b.workers, max(8, H // TILE // 4)) if decode else b.cores_for_tiles(seq_tiles)

    iteration: list[int] = []
    layer_of: list[int] = []

    def emit(tid: int, layer: int) -> None:
        iteration.append(tid)
        layer_of.append(layer)

    # ---------------------------------------------------------------- prologue
    # prefill: row-major embeddings, then tilize; decode: tilized embeddings, then shard to L1
    if decode:
        emb_out = tensor(1, 1, M, H, logical_y=m)
    else:
        emb_out = tensor(1, 1, M, H, layout="ROW_MAJOR", logical_y=m)
    emit(
        b.simple(
            "embeddings",
            "EmbeddingsDeviceOperation",
            DATA_MOVEMENT,
            "embeddings",
            [
                tensor(1, 1, 1, M, layout="ROW_MAJOR", dtype="UINT32", logical_x=m),
                tensor(1, 1, cfg.vocab, H, layout="ROW_MAJOR"),
            ],
            [emb_out],
            attrs={
                "embeddings_type": "EmbeddingsType::GENERIC",
                "output_dtype": "DataType::BFLOAT16",
                "output_mem_config": mem_cfg(emb_out, 1, gx),
                "pad_token": "std::nullopt",
                "tilized": "true" if decode else "false",
            },
            cycles_per_tile=200,
            dram_traffic=4.0 * M * H,
        ),
        -1,
    )
    if not decode:
        emit(
            b.simple(
                "tilize",
                "TilizeWithValPaddingDeviceOperation",
                DATA_MOVEMENT,
                "tilize",
                [emb_out],
                [act(H)],
                attrs={
                    "enough_space_height": "true",
                    "enough_space_width": "true",
                    "output_dtype": "DataType::BFLOAT16",
                    "output_mem_config": mem_cfg(act(H), 1, gx),
                    "output_padded_shape": f"Shape([1; 1; {M}; {H}])",
                    "pad_value": "0",
                    "sub_core_grids": "std::nullopt",
                    "use_multicore": "true",
                },
                fidelity="HiFi4",
                cycles_per_tile=150,
            ),
            -1,
        )
    else:
        emit(
            b.simple(
                "i2s_embed",
                "InterleavedToShardedDeviceOperation",
                DATA_MOVEMENT,
                "i2s",
                [emb_out],
                [act(H)],
                attrs={
                    "keep_l1_aligned": "false",
                    "output_dtype": "DataType::BFLOAT16",
                    "output_mem_config": mem_cfg(act(H), norm_cores, gx),
                },
                cores=norm_cores,
            ),
            -1,
        )

    # ---------------------------------------------------------------- layers
    extras_p = rng.uniform(0.15, 0.45)

    def layernorm(key: str, layer: int) -> None:
        emit(b.layernorm(key, act(H), cores=norm_cores, rms=cfg.style == "llama", sharded=decode), layer)

    def binary(key: str, layer: int, op: str = "ADD", x: int = H) -> None:
        emit(b.binary(key, act(x), op=op, mem_cores=norm_cores), layer)

    def ccl_pair(key: str, layer: int) -> None:
        if d <= 1:
            return
        full = act(H, mem="DRAM_INTERLEAVED")
        part = act(H // d if H % (32 * d) == 0 else pad(H // d), mem="DRAM_INTERLEAVED")
        for tid in b.ccl_pair(key, full, part):
            emit(tid, layer)

    def layer_ops(li: int, extras: dict[str, bool]) -> None:
        layernorm("ln_attn", li)
        a_in = act(H)
        if extras["i2s"] and not decode:
            shard = act(H, mem="L1_BLOCK_SHARDED")
            emit(
                b.simple(
                    "i2s_qkv",
                    "InterleavedToShardedDeviceOperation",
                    DATA_MOVEMENT,
                    "i2s",
                    [a_in],
                    [shard],
                    attrs={
                        "keep_l1_aligned": "false",
                        "output_dtype": "DataType::BFLOAT16",
                        "output_mem_config": mem_cfg(shard, b.workers, gx),
                    },
                    cores=b.workers,
                ),
                li,
            )
            a_in = shard
        qkv_out = act(qkv_n, mem="L1_BLOCK_SHARDED" if a_in.memory == "L1_BLOCK_SHARDED" else act_mem)
        bias = tensor(1, 1, 32, qkv_n, logical_y=1) if cfg.has_bias else None
        emit(
            b.matmul(
                f"qkv_{a_in.memory}",
                a_in,
                weight(H, qkv_n),
                qkv_out,
                fidelity=fid_w,
                bias=bias,
                dram_sharded=use_dram_sharded,
            ),
            li,
        )
        if qkv_out.memory == "L1_BLOCK_SHARDED":
            back = act(qkv_n)
            emit(
                b.simple(
                    "s2i_qkv",
                    "ShardedToInterleavedDeviceOperation",
                    DATA_MOVEMENT,
                    "s2i",
                    [qkv_out],
                    [back],
                    attrs={
                        "is_l1_aligned": "false",
                        "num_slices": "1",
                        "output_dtype": "DataType::BFLOAT16",
                        "output_mem_config": mem_cfg(back, 1, gx),
                    },
                    cores=b.workers,
                ),
                li,
            )
            qkv_out = back
        if extras["reshape"] and not decode:
            emit(
                b.simple(
                    "reshape_qkv",
                    "ReshapeDeviceOperation",
                    DATA_MOVEMENT,
                    "reshape",
                    [qkv_out],
                    [qkv_out],
                    attrs={
                        "logical_output_shape": f"Shape([1; 1; {m}; {qkv_n}])",
                        "output_mem_config": mem_cfg(qkv_out, 1, gx),
                        "padded_output_shape": f"Shape([1; 1; {M}; {qkv_n}])",
                        "recreate_mapping_tensor": "false",
                        "sub_core_grid": "std::nullopt",
                    },
                ),
                li,
            )
        if decode:
            users = M
            q = tensor(1, users, pad(nh), hd, logical_y=nh, memory="L1_HEIGHT_SHARDED")
            k = tensor(1, users, pad(nkv), hd, logical_y=nkv, memory="L1_HEIGHT_SHARDED")
            emit(
                b.simple(
                    "create_heads",
                    "NLPCreateQKVHeadsDecodeDeviceOperation",
                    DATA_MOVEMENT,
                    "create_heads_decode",
                    [qkv_out],
                    [q, k, k],
                    attrs={
                        "head_dim": str(hd),
                        "num_kv_heads": str(nkv),
                        "num_q_heads": str(nh),
                        "output_mem_config": mem_cfg(q, users, gx),
                        "overlap_qk_coregrid": "true",
                        "slice_size": "std::nullopt",
                    },
                    cores=users,
                ),
                li,
            )
        else:
            q = tensor(1, nh, M, hd, logical_y=m)
            k = tensor(1, nkv, M, hd, logical_y=m)
            emit(
                b.simple(
                    "create_heads",
                    "NlpCreateHeadsDeviceOperation",
                    DATA_MOVEMENT,
                    "create_heads",
                    [qkv_out],
                    [q, k, k],
                    attrs={
                        "head_dim": str(hd),
                        "num_kv_heads": str(nkv),
                        "num_q_heads": str(nh),
                        "output_mem_config": mem_cfg(q, 1, gx),
                        "transpose_k_heads": "false",
                    },
                ),
                li,
            )
        # rotary position embeddings on Q and K
        cos = tensor(1, 1, M if not decode else 32, hd, logical_y=m if not decode else 32)
        trans = tensor(1, 1, 32, 32)
        for name, t in (("rot_q", q), ("rot_k", k)):
            emit(
                b.simple(
                    name,
                    "RotaryEmbeddingLlamaDeviceOperation",
                    ELTWISE,
                    "rotary",
                    [t, cos, cos, trans],
                    [t],
                    attrs={
                        "compute_kernel_config": compute_cfg(arch, "HiFi4", approx=True),
                        "is_decode_mode": "true" if decode else "false",
                        "output_mem_config": mem_cfg(t, t.shape[1] if decode else 1, gx),
                    },
                    fidelity="HiFi4",
                    cycles_per_tile=320,
                ),
                li,
            )
        out_heads = tensor(1, nh, M, hd, logical_y=m) if not decode else q
        if decode:
            cache = tensor(M, nkv, cfg.kv_len, hd, dtype="BFLOAT8_B")
            for name in ("update_k", "update_v"):
                emit(
                    b.simple(
                        name,
                        "PagedUpdateCacheDeviceOperation",
                        DATA_MOVEMENT,
                        "update_cache",
                        [tensor(M, nkv, 32, hd, dtype="BFLOAT8_B", memory="DRAM_INTERLEAVED"), k],
                        [tensor(1, M, 32, hd, dtype="BFLOAT8_B", memory="DRAM_INTERLEAVED")],
                        attrs={
                            "batch_offset": "0",
                            "compute_kernel_config": compute_cfg(arch, "HiFi4"),
                            "op_type": "PagedUpdateCacheOpType::UPDATE",
                            "share_cache": "false",
                        },
                        fidelity="HiFi4",
                        cores=M,
                        cycles_per_tile=400,
                    ),
                    li,
                )
            pos = int(cfg.kv_len * 0.6)
            sdpa_flops = 4.0 * M * nh * pos * hd
            emit(
                b.simple(
                    "sdpa",
                    "SdpaDecodeDeviceOperation",
                    SDPA,
                    "sdpa_decode",
                    [q, cache, cache, tensor(1, 1, 1, M, layout="ROW_MAJOR", dtype="INT32")],
                    [q],
                    attrs={
                        "compute_kernel_config": compute_cfg(arch, fid_attn),
                        "is_causal": "true",
                        "k_chunk_size": "256",
                        "output_mem_config": mem_cfg(q, M, gx),
                        "paged_attention": "false",
                        "program_config": f"SDPAProgramConfig(compute_with_storage_grid_size=(x={gx};y={arch.grid[1]});sub_core_grids=std::nullopt;q_chunk_size=32;k_chunk_size=256;exp_approx_mode=0;max_cores_per_head_batch=16)",
                        "scale": f"{1 / math.sqrt(hd):.9f}",
                    },
                    fidelity=fid_attn,
                    cores=b.workers,
                    flops=sdpa_flops,
                    eff=(0.25, 0.55),
                ),
                li,
            )
        else:
            sdpa_flops = 4.0 * nh * M * M * hd / 2
            emit(
                b.simple(
                    "sdpa",
                    "SDPAOperation",
                    SDPA,
                    "sdpa",
                    [q, k, k],
                    [out_heads],
                    attrs={
                        "compute_kernel_config": compute_cfg(arch, fid_attn),
                        "is_causal": "true",
                        "output_mem_config": mem_cfg(out_heads, 1, gx),
                        "program_config": f"SDPAProgramConfig(compute_with_storage_grid_size=(x={gx};y={arch.grid[1]});sub_core_grids=std::nullopt;q_chunk_size={min(M, 256)};k_chunk_size={min(M, 256)};exp_approx_mode=0;max_cores_per_head_batch=16)",
                        "scale": f"{1 / math.sqrt(hd):.9f}",
                    },
                    fidelity=fid_attn,
                    cores=b.workers,
                    flops=sdpa_flops,
                    eff=(0.3, 0.6),
                ),
                li,
            )
        attn_cat = act(nh * hd)
        emit(
            b.simple(
                "concat_heads",
                "NLPConcatHeadsDecodeDeviceOperation" if decode else "NLPConcatHeadsDeviceOperation",
                DATA_MOVEMENT,
                "concat_heads_decode" if decode else "concat_heads",
                [out_heads],
                [attn_cat],
                attrs={
                    "num_heads": str(nh),
                    "output_mem_config": mem_cfg(attn_cat, norm_cores, gx),
                }
                if decode
                else {"output_mem_config": mem_cfg(attn_cat, 1, gx)},
                cores=nh if decode else None,
            ),
            li,
        )
        emit(
            b.matmul("attn_out", attn_cat, weight(nh * hd, H), act(H), fidelity=fid_w, dram_sharded=use_dram_sharded),
            li,
        )
        ccl_pair("ccl_attn", li)
        binary("residual_attn", li)
        layernorm("ln_mlp", li)
        if cfg.style == "llama":
            gate = act(ffn)
            emit(
                b.matmul("mlp_w1", act(H), weight(H, ffn, mdt), gate, fidelity=fid_mlp, activation="SILU", dram_sharded=use_dram_sharded),
                li,
            )
            emit(
                b.matmul("mlp_w3", act(H), weight(H, ffn, mdt), gate, fidelity=fid_mlp, dram_sharded=use_dram_sharded),
                li,
            )
            binary("mlp_mul", li, op="MUL", x=ffn)
        else:
            emit(
                b.matmul(
                    "mlp_up",
                    act(H),
                    weight(H, ffn, mdt),
                    act(ffn),
                    fidelity=fid_mlp,
                    activation="GELU",
                    bias=tensor(1, 1, 32, ffn, logical_y=1) if cfg.has_bias else None,
                    dram_sharded=use_dram_sharded,
                ),
                li,
            )
        down_in = act(ffn)
        if extras["typecast"]:
            down_in = act(ffn, dtype="BFLOAT8_B")
            emit(
                b.simple(
                    "typecast_mlp",
                    "TypecastDeviceOperation",
                    ELTWISE,
                    "typecast",
                    [act(ffn)],
                    [down_in],
                    attrs={
                        "bfp8_pack_precise": "false",
                        "fp32_dest_acc_en": "false",
                        "input_dtype": "DataType::BFLOAT16",
                        "output_dtype": "DataType::BFLOAT8_B",
                        "output_memory_config": mem_cfg(down_in, norm_cores, gx),
                        "preserve_fp32_precision": "false",
                        "sub_core_grids": "std::nullopt",
                    },
                    fidelity="HiFi4",
                    cycles_per_tile=90,
                ),
                li,
            )
        emit(
            b.matmul(
                f"mlp_down_{down_in.dtype}",
                down_in,
                weight(ffn, H, mdt),
                act(H),
                fidelity=fid_mlp,
                dram_sharded=use_dram_sharded,
            ),
            li,
        )
        ccl_pair("ccl_mlp", li)
        binary("residual_mlp", li)

    for li in range(cfg.layers):
        extras = {
            "i2s": bool(rng.random() < extras_p),
            "reshape": bool(rng.random() < extras_p),
            "typecast": bool(rng.random() < extras_p * 0.6),
        }
        layer_ops(li, extras)

    # ---------------------------------------------------------------- epilogue
    last = act(H, rows=32, lrows=min(m, 32), mem="DRAM_INTERLEAVED") if not decode else act(H)
    if not decode:
        emit(
            b.simple(
                "slice_last",
                "SliceDeviceOperation",
                DATA_MOVEMENT,
                "slice",
                [act(H)],
                [last],
                attrs={
                    "output_mem_config": mem_cfg(last, 1, gx),
                    "slice_end": f"Shape([1; 1; {m}; {H}])",
                    "slice_start": f"Shape([0; 0; {max(0, m - 32)}; 0])",
                    "step": "Shape([1; 1; 1; 1])",
                    "sub_core_grids": "std::nullopt",
                    "use_tensor_args": "false",
                },
            ),
            -1,
        )
    layernorm("ln_final", -1)
    vocab_local = pad(-(-cfg.vocab // d))
    lm_in = tensor(1, 1, 32, H, logical_y=min(m, 32), memory="L1_WIDTH_SHARDED" if arch.dram_sharded_cores else "DRAM_INTERLEAVED")
    logits = tensor(1, 1, 32, vocab_local, logical_y=min(m, 32), memory="L1_WIDTH_SHARDED" if arch.dram_sharded_cores else "DRAM_INTERLEAVED")
    lm_w = tensor(1, 1, H, vocab_local, dtype="BFLOAT8_B", memory="DRAM_WIDTH_SHARDED" if arch.dram_sharded_cores else "DRAM_INTERLEAVED")
    emit(b.matmul("lm_head", lm_in, lm_w, logits, fidelity="HiFi2", dram_sharded=bool(arch.dram_sharded_cores)), -1)
    if d > 1:
        full = tensor(1, 1, 32, pad(cfg.vocab), logical_y=min(m, 32), memory="DRAM_INTERLEAVED")
        emit(
            b.simple(
                "ag_logits",
                "AllGatherAsyncDeviceOperation",
                CCL,
                "all_gather",
                [logits],
                [full],
                attrs={"cluster_axis": "1", "dim": "3", "num_links": "2", "ring_size": str(d), "topology": "Topology::Linear"},
                cores=int(rng.choice([18, 20])),
                ccl_bytes=full.nbytes * (d - 1) / d,
                eff=(0.5, 0.8),
            ),
            -1,
        )
        logits = full
    rm = tensor(1, 1, 32, logits.shape[3], layout="ROW_MAJOR", logical_y=min(m, 32))
    emit(
        b.simple(
            "untilize",
            "UntilizeDeviceOperation",
            DATA_MOVEMENT,
            "untilize",
            [logits],
            [rm],
            attrs={
                "enough_space_height": "true",
                "enough_space_width": "true",
                "fp32_dest_acc_en": "false",
                "output_mem_config": mem_cfg(rm, 1, gx),
                "sub_core_grids": "std::nullopt",
                "use_multicore": "true",
                "use_pack_untilize": "true",
            },
            fidelity="HiFi4",
            cycles_per_tile=120,
        ),
        -1,
    )
    return Program(cfg, b.templates, np.asarray(iteration, dtype=np.int64), np.asarray(layer_of, dtype=np.int64))
