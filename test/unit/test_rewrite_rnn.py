"""rewrite_rnn: every rnn, gru and lstm variant (direction, bias, initial states, peepholes, equal,
shorter and varying sequence lengths, short activation lists) gives the same outputs unrolled as
the recurrent op's own compute, by MIGraphX's rms rule; the ref pipeline keeps them too."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_pass_differential import copy_of, rms_ok

from mgxir.interp.interpreter import run_program
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.passes.rewrite_rnn import RewriteRnn
from mgxir.verifier import verify

SEQ, BATCH, INPUT, HIDDEN = 4, 3, 2, 3
GATES = {"rnn": 1, "gru": 3, "lstm": 4}


def recurrent_program(
    kind: str,
    direction: str,
    *,
    bias: bool = True,
    initial: bool = True,
    peephole: bool = False,
    lengths: list[int] | None = None,
    lengths_param: bool = False,
    functions: tuple[str, ...] | None = None,
    **attributes: object,
) -> tuple[Program, dict[str, np.ndarray]]:
    """One recurrent op with the inputs asked for, returning its result and last states."""
    rng = np.random.default_rng(len(kind) * 7 + len(direction))
    program = Program()
    main = program.main
    dirs = 2 if direction == "bidirectional" else 1
    gates = GATES[kind]
    values: dict[str, np.ndarray] = {}

    def param(name: str, lens: tuple[int, ...], dtype: DType = DType.float) -> Instruction:
        values[name] = rng.uniform(-1, 1, size=lens).astype(np.float32)
        return main.add_parameter(name, Shape.make(dtype, lens))

    def undefined() -> Instruction:
        return main.add_instruction("undefined")

    x = param("x", (SEQ, BATCH, INPUT))
    args = [x, param("w", (dirs, gates * HIDDEN, INPUT)), param("r", (dirs, gates * HIDDEN, HIDDEN))]
    args.append(param("b", (dirs, 2 * gates * HIDDEN)) if bias else undefined())
    if lengths is None:
        args.append(undefined())
    elif lengths_param:
        args.append(main.add_parameter("seq_lens", Shape.make(DType.int32, (BATCH,))))
        values["seq_lens"] = np.asarray(lengths, np.int32)
    else:
        args.append(main.add_literal(Literal(Shape.make(DType.int32, (BATCH,)), np.asarray(lengths))))
    state = (dirs, BATCH, HIDDEN)
    args.append(param("h0", state) if initial else undefined())
    if kind == "lstm":
        args.append(param("c0", state) if initial else undefined())
        args.append(param("p", (dirs, 3 * HIDDEN)) if peephole else undefined())
    while args[-1].op.defn.name == "undefined":
        args.pop()
    if functions is not None:
        attributes["actv_func"] = functions
    rnn = main.add_instruction(kind, args, hidden_size=HIDDEN, direction=direction, **attributes)
    outputs = [rnn, main.add_instruction("rnn_last_hs_output", [rnn])]
    if kind == "lstm":
        outputs.append(main.add_instruction("rnn_last_cell_output", [rnn]))
    main.add_return(outputs)
    verify(program)
    return program, values


def check_same_results(program: Program, values: dict[str, np.ndarray], pipeline: str = "rewrite_rnn,dce") -> Program:
    before = [np.asarray(v) for v in run_program(copy_of(program), values)]
    rewritten = copy_of(program)
    for p in parse_pipeline(pipeline):
        p.apply(rewritten, PassContext())
    verify(rewritten)
    after = [np.asarray(v) for v in run_program(rewritten, values)]
    assert len(before) == len(after)
    for i, (b, a) in enumerate(zip(before, after)):
        assert b.shape == a.shape, f"output {i}: {b.shape} became {a.shape}"
        assert rms_ok(a, b), f"output {i} differs:\n{a}\n{b}"
    return rewritten


def recurrent_names(program: Program) -> list[str]:
    return [i.op.defn.name for i in program.main if i.op.defn.name in GATES]


VARIANTS = list(
    itertools.product(("rnn", "gru", "lstm"), ("forward", "reverse", "bidirectional"), (False, True), (False, True))
)


@pytest.mark.parametrize(("kind", "direction", "bias", "initial"), VARIANTS)
def test_unrolled_matches_op(kind: str, direction: str, bias: bool, initial: bool) -> None:
    program, values = recurrent_program(kind, direction, bias=bias, initial=initial)
    rewritten = check_same_results(program, values)
    assert recurrent_names(rewritten) == []


@pytest.mark.parametrize("kind", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize(
    ("lengths", "as_param"),
    [([SEQ] * BATCH, False), ([2] * BATCH, False), ([1] * BATCH, False), ([4, 1, 2], False), ([3, 4, 1], True)],
)
def test_sequence_lengths(kind: str, direction: str, lengths: list[int], as_param: bool) -> None:
    program, values = recurrent_program(kind, direction, lengths=lengths, lengths_param=as_param)
    check_same_results(program, values)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_peepholes(direction: str) -> None:
    program, values = recurrent_program("lstm", direction, peephole=True)
    check_same_results(program, values)
    program, values = recurrent_program("lstm", direction, peephole=True, lengths=[3, 1, 4])
    check_same_results(program, values)


def test_gru_linear_before_reset() -> None:
    for direction in ("forward", "bidirectional"):
        program, values = recurrent_program("gru", direction, linear_before_reset=1)
        check_same_results(program, values)


@pytest.mark.parametrize(
    ("kind", "functions"),
    [
        ("rnn", ()),
        ("rnn", ("relu",)),
        ("rnn", ("sigmoid", "tanh")),
        ("gru", ("tanh",)),
        ("gru", ("sigmoid", "relu")),
        ("gru", ("sigmoid", "tanh", "relu")),
        ("lstm", ("sigmoid",)),
        ("lstm", ("sigmoid", "relu")),
        ("lstm", ("sigmoid", "tanh", "relu", "tanh")),
        ("lstm", ("sigmoid", "tanh", "tanh", "relu", "sigmoid")),
    ],
)
def test_short_activation_lists(kind: str, functions: tuple[str, ...]) -> None:
    for direction in ("forward", "bidirectional"):
        program, values = recurrent_program(kind, direction, functions=functions)
        check_same_results(program, values)


def test_clip_and_input_forget_stay() -> None:
    program, _ = recurrent_program("rnn", "forward", clip=0.5)
    RewriteRnn().apply(program, PassContext())
    assert recurrent_names(program) == ["rnn"]
    program, _ = recurrent_program("lstm", "forward", input_forget=1)
    RewriteRnn().apply(program, PassContext())
    assert recurrent_names(program) == ["lstm"]


@pytest.mark.parametrize("lengths", [None, [2, 2, 2], [4, 1, 3]])
def test_ref_pipeline(lengths: list[int] | None) -> None:
    program, values = recurrent_program("lstm", "bidirectional", peephole=True, lengths=lengths)
    rewritten = check_same_results(program, values, "ref")
    assert recurrent_names(rewritten) == []


# MIGraphX's test/ref/rnn_ops.cpp, lstm_bidirectional_var_seq_lens: inputs and MIGraphX's results
MIGRAPHX_LSTM = {
    "w_data": [
        0.1236,
        -0.3942,
        0.4149,
        0.0795,
        0.4934,
        -0.2858,
        0.2602,
        -0.3098,
        0.0567,
        0.3344,
        0.3607,
        -0.0551,
        0.4952,
        0.3799,
        0.0630,
        -0.3532,
        0.0023,
        -0.0592,
        0.4267,
        0.2382,
        -0.0784,
        -0.0032,
        -0.2476,
        -0.0206,
        -0.4963,
        0.4837,
        0.0827,
        0.0123,
        -0.1203,
        -0.0279,
        -0.0049,
        0.4721,
        -0.3564,
        -0.1286,
        0.4090,
        -0.0504,
        0.0575,
        -0.2138,
        0.1071,
        0.1976,
        -0.0758,
        0.0139,
        -0.0761,
        0.3991,
        -0.2965,
        -0.4845,
        -0.1496,
        0.3285,
        -0.2763,
        -0.4715,
        -0.3010,
        -0.2306,
        -0.2283,
        -0.2656,
        0.2035,
        0.3570,
        -0.1499,
        0.4390,
        -0.1843,
        0.2351,
        0.3357,
        0.1217,
        0.1401,
        0.3300,
        -0.0429,
        0.3266,
        0.4834,
        -0.3914,
        -0.1480,
        0.3734,
        -0.0372,
        -0.1746,
        0.0550,
        0.4177,
        -0.1332,
        0.4391,
        -0.3287,
        -0.4401,
        0.1486,
        0.1346,
        0.1048,
        -0.4361,
        0.0886,
        -0.3840,
        -0.2730,
        -0.1710,
        0.3274,
        0.0169,
        -0.4462,
        0.0729,
        0.3983,
        -0.0669,
        0.0756,
        0.4150,
        -0.4684,
        -0.2522,
    ],
    "r_data": [
        0.1237,
        0.1229,
        -0.0766,
        -0.1144,
        -0.1186,
        0.2922,
        0.2478,
        0.3159,
        -0.0522,
        0.1685,
        -0.4621,
        0.1728,
        0.0670,
        -0.2458,
        -0.3835,
        -0.4589,
        -0.3109,
        0.4908,
        -0.0133,
        -0.1858,
        -0.0590,
        -0.0347,
        -0.2353,
        -0.0671,
        -0.3812,
        -0.0004,
        -0.1432,
        0.2406,
        0.1033,
        -0.0265,
        -0.3902,
        0.0755,
        0.3733,
        0.4383,
        -0.3140,
        0.2537,
        -0.1818,
        -0.4127,
        0.3506,
        0.2562,
        0.2926,
        0.1620,
        -0.4849,
        -0.4861,
        0.4426,
        0.2106,
        -0.0005,
        0.4418,
        -0.2926,
        -0.3100,
        0.1500,
        -0.0362,
        -0.3801,
        -0.0065,
        -0.0631,
        0.1277,
        0.2315,
        0.4087,
        -0.3963,
        -0.4161,
        -0.2169,
        -0.1344,
        0.3468,
        -0.2260,
        -0.4564,
        -0.4432,
        0.1605,
        0.4387,
        0.0034,
        0.4116,
        0.2824,
        0.4775,
        -0.2729,
        -0.4707,
        0.1363,
        0.2218,
        0.0559,
        0.2828,
        0.2093,
        0.4687,
        0.3794,
        -0.1069,
        -0.3049,
        0.1430,
        -0.2506,
        0.4644,
        0.2755,
        -0.3645,
        -0.3155,
        0.1425,
        0.2891,
        0.1786,
        -0.3274,
        0.2365,
        0.2522,
        -0.4312,
        -0.0562,
        -0.2748,
        0.0776,
        -0.3154,
        0.2851,
        -0.3930,
        -0.1174,
        0.4360,
        0.2436,
        0.0164,
        -0.0680,
        0.3403,
        -0.2857,
        -0.0459,
        -0.2991,
        -0.2624,
        0.4194,
        -0.3291,
        -0.4659,
        0.3300,
        0.0454,
        0.4981,
        -0.4706,
        -0.4584,
        0.2596,
        0.2871,
        -0.3509,
        -0.1910,
        0.3987,
        -0.1687,
        -0.0032,
        -0.1038,
    ],
    "bias_data": [
        0.0088,
        0.1183,
        0.1642,
        -0.2631,
        -0.1330,
        -0.4008,
        0.3881,
        -0.4407,
        -0.2760,
        0.1274,
        -0.0083,
        -0.2885,
        0.3949,
        -0.0182,
        0.4445,
        0.3477,
        0.2266,
        0.3423,
        -0.0674,
        -0.4067,
        0.0807,
        0.1109,
        -0.2036,
        0.1782,
        -0.2467,
        -0.0730,
        -0.4216,
        0.0316,
        -0.3025,
        0.3637,
        -0.3181,
        -0.4655,
        -0.0258,
        0.0073,
        -0.4780,
        -0.4101,
        -0.3556,
        -0.1017,
        0.3632,
        -0.1823,
        0.1479,
        0.1677,
        -0.2603,
        0.0381,
        0.1575,
        0.1896,
        0.4755,
        -0.4794,
        0.2167,
        -0.4474,
        -0.3139,
        0.1018,
        0.4470,
        -0.4232,
        0.3247,
        -0.1636,
        -0.1582,
        -0.1703,
        0.3920,
        0.2055,
        -0.4386,
        0.4208,
        0.0717,
        0.3789,
    ],
    "input_data": [
        -0.5516,
        0.2391,
        -1.6951,
        -0.4313,
        -0.9730,
        -0.2005,
        2.3930,
        -0.5221,
        -0.1331,
        -0.0910,
        1.2122,
        -0.1952,
        0.4661,
        0.6494,
        2.1332,
        -1.0972,
        0.9816,
        0.1122,
        0.3577,
        1.3508,
        -0.5366,
        1.7449,
        0.5483,
        -0.0701,
        -0.4100,
        -2.2344,
        0.3685,
        0.4583,
        2.3794,
        1.0372,
        -0.8887,
        0.7892,
        -0.4012,
        -0.2818,
        -2.3374,
        1.5310,
    ],
    "ih_data": [
        1.9104,
        -1.9004,
        0.3337,
        0.5741,
        0.5671,
        0.0458,
        0.4514,
        -0.8968,
        -0.9201,
        0.1962,
        0.5771,
        -0.5332,
        1.5289,
        1.0986,
        0.6091,
        1.6462,
        0.8720,
        0.5349,
        -0.1962,
        -1.7416,
        -0.9912,
        1.2831,
        1.0896,
        -0.6959,
    ],
    "ic_data": [
        0.9569,
        -0.5981,
        1.1312,
        1.0945,
        1.1055,
        -0.1212,
        -0.9097,
        0.7831,
        -1.6991,
        -1.9498,
        -1.2567,
        -0.4114,
        -0.8323,
        0.3998,
        0.1831,
        0.5938,
        2.7096,
        -0.1790,
        0.0022,
        -0.8040,
        0.1578,
        0.0567,
        0.8069,
        -0.5141,
    ],
    "pph_data": [
        1.84369764,
        0.68413646,
        -0.44892886,
        -1.50904413,
        0.3860796,
        -0.52186625,
        1.08474445,
        -1.80867321,
        1.32594529,
        0.4336262,
        -0.83699064,
        0.49162736,
        -0.8271,
        -0.5683,
        0.4562,
        -1.2545,
        1.2729,
        -0.4082,
        -0.4392,
        -0.9406,
        0.7794,
        1.8194,
        -0.5811,
        0.2166,
    ],
    "output_data_gold": [
        0.079753,
        -0.289854,
        0.160043,
        0.115056,
        0.294074,
        -0.0319677,
        -0.0955337,
        0.104168,
        0.022618,
        -0.121195,
        -0.4065,
        -0.252054,
        -0.141643,
        0.0451978,
        0.140804,
        0.0745128,
        0.911307,
        0.11468,
        0.114449,
        0.0196755,
        -0.262807,
        0.275286,
        0.358395,
        0.266267,
        0,
        0,
        0,
        0,
        0.421857,
        0.0459771,
        -0.144955,
        0.0720673,
        -0.0300906,
        -0.0890598,
        -0.135266,
        -0.0413375,
        0,
        0,
        0,
        0,
        0.96657,
        0.0755112,
        0.0620917,
        -0.264845,
        -0.128254,
        0.125398,
        0.0665142,
        -0.163651,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0.103489,
        0.0142918,
        -0.123408,
        0.0401075,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        -0.0644683,
        0.371512,
        0.212431,
        -0.116131,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ],
    "last_output_data_gold": [
        0.079753,
        -0.289854,
        0.160043,
        0.115056,
        0.421857,
        0.0459771,
        -0.144955,
        0.0720673,
        0.103489,
        0.0142918,
        -0.123408,
        0.0401075,
        -0.141643,
        0.0451978,
        0.140804,
        0.0745128,
        0.911307,
        0.11468,
        0.114449,
        0.0196755,
        -0.262807,
        0.275286,
        0.358395,
        0.266267,
    ],
    "last_cell_data_gold": [
        0.600582,
        -0.601197,
        0.353558,
        0.789097,
        0.737121,
        0.134902,
        -0.303595,
        0.241948,
        0.391174,
        0.0308845,
        -0.561745,
        0.0730323,
        -0.326822,
        0.301121,
        0.219523,
        0.415242,
        2.08242,
        0.442513,
        0.187127,
        0.0577626,
        -0.611307,
        0.55454,
        0.4364,
        0.509436,
    ],
    "lho_data_gold": [
        -0.058052,
        0.0795391,
        0.266617,
        -0.0128746,
        0.0309878,
        0.0971544,
        0.149294,
        -0.0492549,
        0.187761,
        0.0501726,
        -0.121584,
        0.0606723,
        -0.120174,
        0.043157,
        0.117138,
        -0.222188,
        0.789732,
        0.128538,
        0.20909,
        0.0553812,
        -0.224905,
        0.32421,
        0.344048,
        0.271694,
    ],
    "lco_data_gold": [
        -0.077353,
        0.245616,
        0.361023,
        -0.0443759,
        0.0685243,
        0.20465,
        0.277867,
        -0.112934,
        0.67312,
        0.120508,
        -0.726968,
        0.113845,
        -0.889294,
        0.182463,
        0.186512,
        -0.402334,
        1.48161,
        0.524116,
        0.347113,
        0.181813,
        -0.434265,
        0.747833,
        0.416053,
        0.558713,
    ],
}


def migraphx_lstm_program(seq_len: int, lengths: list[int]) -> tuple[Program, dict[str, np.ndarray]]:
    """The bidirectional LSTM (hidden 4, batch 3, input 3) with every input, on MIGraphX's data."""
    program = Program()
    main = program.main
    data = {k: np.asarray(v, np.float32) for k, v in MIGRAPHX_LSTM.items()}
    x = np.zeros((seq_len, 3, 3), np.float32)
    x[:4] = data["input_data"].reshape(4, 3, 3)
    values = {
        "x": x,
        "w": data["w_data"].reshape(2, 16, 3),
        "r": data["r_data"].reshape(2, 16, 4),
        "b": data["bias_data"].reshape(2, 32),
        "h0": data["ih_data"].reshape(2, 3, 4),
        "c0": data["ic_data"].reshape(2, 3, 4),
        "p": data["pph_data"].reshape(2, 12),
    }
    args = [main.add_parameter(name, Shape.make(DType.float, v.shape)) for name, v in values.items()]
    lengths_literal = main.add_literal(Literal(Shape.make(DType.int32, (3,)), np.asarray(lengths)))
    args.insert(4, lengths_literal)
    lstm = main.add_instruction("lstm", args, hidden_size=4, direction="bidirectional")
    main.add_return([lstm, *(main.add_instruction(n, [lstm]) for n in ("rnn_last_hs_output", "rnn_last_cell_output"))])
    return program, values


@pytest.mark.parametrize(("seq_len", "lengths"), [(4, [1, 2, 3]), (6, [4, 4, 4])])
def test_migraphx_reference_results(seq_len: int, lengths: list[int]) -> None:
    program, values = migraphx_lstm_program(seq_len, lengths)
    rewritten = check_same_results(program, values)
    hidden, last_hidden, last_cell = (np.asarray(v) for v in run_program(rewritten, values))
    gold = MIGRAPHX_LSTM
    if seq_len == 4:
        assert rms_ok(hidden.ravel(), np.asarray(gold["output_data_gold"]))
        assert rms_ok(last_hidden.ravel(), np.asarray(gold["last_output_data_gold"]))
        assert rms_ok(last_cell.ravel(), np.asarray(gold["last_cell_data_gold"]))
    else:
        assert rms_ok(last_hidden.ravel(), np.asarray(gold["lho_data_gold"]))
        assert rms_ok(last_cell.ravel(), np.asarray(gold["lco_data_gold"]))
        assert not hidden[4:].any()
