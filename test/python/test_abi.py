"""The front end binds libpfrt from runtime/include/pfrt/pfrt_abi.def
(pipeflow._abi): its ctypes signatures are the rows, and a row that changes
without the Python caller changing fails the call with a clear error."""

import ctypes
import os
import re
import shutil
import subprocess

import pytest

import pipeflow as flow
from pipeflow import _abi, _runtime, nn

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEF = os.path.join(REPO, "runtime", "include", "pfrt", "pfrt_abi.def")
P0 = flow.placement("cpu", [0])
B = flow.sbp.broadcast
POINTER_TYPES = (ctypes._Pointer, ctypes.c_void_p, ctypes.c_char_p)


class StubFunction:
    """A stand-in for a ctypes function of a loaded library: records calls."""

    def __init__(self, name):
        self.name, self.restype, self.argtypes, self.calls = name, None, None, []

    def __call__(self, *args):
        self.calls.append(args)
        return 0


class StubLibrary:
    def __init__(self, names):
        for name in names:
            setattr(self, name, StubFunction(name))


def assert_matches_row(name, restype, argtypes, row):
    """Every non-pointer slot is the row's type; a PTR slot is a pointer type."""
    assert len(argtypes) == len(row.args), (name, argtypes, row)
    for slot, tag, ctype in [("result", row.result, restype)] + list(
            zip(range(len(row.args)), row.args, argtypes, strict=True)):
        if tag == "PTR":
            assert isinstance(ctype, type) and issubclass(ctype, POINTER_TYPES), (name, slot, ctype)
        else:
            assert ctype is _abi.TAGS[tag], (name, slot, ctype, tag)


def test_the_def_is_found_and_parsed():
    assert os.path.samefile(_abi.path(), DEF)
    rows = _abi.rows()
    assert rows["pfrt_set_input"].args == ("I64", "PTR", "I64")
    assert rows["pfrt_set_input"].result == "I32"
    assert rows["pfrt_end_step"].result == "VOID" and rows["pfrt_end_step"].args == ()
    assert rows["pfrt_loss_value"].result == "F32"
    assert rows["pfrt_set_input"].where.endswith(":" + str(_line_of_row("pfrt_set_input")))
    assert "pf_step" not in rows and _abi.row("pf_step").args == ("I64",)


def _line_of_row(name):
    with open(DEF) as f:
        return next(i for i, line in enumerate(f, 1) if line.startswith(f"PFRT_FN({name},"))


@pytest.mark.skipif(shutil.which("cpp") is None, reason="no C preprocessor")
def test_the_parser_reads_what_the_preprocessor_reads():
    """The C preprocessor expands every row; the parser finds the same rows."""
    source = "#define PFRT_FN(name, ...) ROW name __VA_ARGS__ ENDROW\n#include \"pfrt_abi.def\"\n"
    out = subprocess.run(["cpp", "-P", "-I", os.path.dirname(DEF), "-"], input=source,
                         capture_output=True, text=True, check=True).stdout
    expanded = {}
    for body in re.findall(r"ROW (.*?) ENDROW", out, re.S):
        name, *tags = [t.strip() for t in body.replace(",", " ").split()]
        expanded[name] = (tags[0], tuple(tags[1:]))
    parsed = {name: (row.result, row.args) for name, row in _abi.rows().items()}
    assert parsed == expanded and len(parsed) > 50


def test_python_binds_every_function_it_calls_with_its_row():
    rows = _abi.rows()
    for name in _runtime.FUNCTIONS:
        row = _abi.row(name)
        assert name in _abi.GENERATED or rows[name] is row
        restype, argtypes = _abi.signature(name, _runtime.POINTERS.get(name))
        assert_matches_row(name, restype, argtypes, row)
    assert set(_runtime.POINTERS) <= set(_runtime.FUNCTIONS)
    # bound through a stand-in library: what ctypes gets is the same
    lib = StubLibrary(_runtime.FUNCTIONS)
    fn = _abi.bind(lib, _runtime.FUNCTIONS, _runtime.POINTERS)
    for name in _runtime.FUNCTIONS:
        cfunc = getattr(lib, name)
        assert getattr(fn, name).cfunc is cfunc
        assert_matches_row(name, cfunc.restype, cfunc.argtypes, _abi.row(name))
    assert lib.pfrt_set_input.argtypes == [ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64]
    assert lib.pfrt_scalar.restype == ctypes.POINTER(ctypes.c_float)
    assert lib.pfrt_broadcast.argtypes[3] is _abi.I64_ARRAY
    fn.pfrt_set_input(0, None, 4)
    assert lib.pfrt_set_input.calls == [(0, None, 4)]
    # ctypes would pass an extra argument of a cdecl function unchecked; the binding does not
    with pytest.raises(TypeError, match=r"pfrt_set_input\(\) takes 3 arguments .*passes 4"):
        fn.pfrt_set_input(0, None, 4, 5)


def _modified_def(tmp_path, monkeypatch, old, new, name="pfrt_abi.def"):
    """A copy of the .def with one row changed, made the front end's."""
    with open(DEF) as f:
        text = f.read()
    assert text.count(old) == 1, old
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    monkeypatch.setenv(_abi.ENV_VAR, str(path))
    return path


def test_a_refined_slot_that_is_no_longer_a_pointer_is_refused(tmp_path, monkeypatch):
    _modified_def(tmp_path, monkeypatch, "PFRT_FN(pfrt_broadcast, I32, PTR, I64, I64, PTR, I64)",
                  "PFRT_FN(pfrt_broadcast, I32, PTR, I64, I64, I64, I64)")
    with pytest.raises(_abi.AbiError, match=r"argument 3 of pfrt_broadcast.*PFRT_FN\(pfrt_broadcast, "
                                            r"I32, PTR, I64, I64, I64, I64\).*only PTR slots"):
        _abi.bind(StubLibrary(_runtime.FUNCTIONS), _runtime.FUNCTIONS, _runtime.POINTERS)


def test_a_missing_or_malformed_def_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(_abi.ENV_VAR, str(tmp_path / "nowhere.def"))
    with pytest.raises(_abi.AbiError, match=r"cannot find libpfrt's ABI description .*nowhere\.def "
                                            r"\(from \$PIPEFLOW_PFRT_ABI\)"):
        _abi.rows()
    bad = tmp_path / "bad.def"
    bad.write_text("PFRT_FN(pfrt_rank, I32)\nPFRT_FN(pfrt_set_input, I32, I64, POINTER)\n")
    monkeypatch.setenv(_abi.ENV_VAR, str(bad))
    with pytest.raises(_abi.AbiError, match=r"bad\.def:2: pfrt_set_input: unknown type tag 'POINTER'"):
        _abi.rows()
    bad.write_text("PFRT_FN(pfrt_rank, I32)\n")
    with pytest.raises(_abi.AbiError, match="has no row for pfrt_set_input"):
        _abi.signature("pfrt_set_input")


class TinyGraph(nn.Graph):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3).to_global(P0, B)
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(flow.optim.SGD(self.fc.parameters(), lr=0.1))

    def build(self, x, y):
        loss = self.loss_fn(self.fc(x), y)
        loss.backward()
        return loss


def tiny_inputs():
    return flow.randn(2, 4).to_global(P0, B), flow.randint(0, 3, (2,)).to_global(P0, B)


def test_a_loaded_program_has_the_rows_signatures(backend):
    graph = TinyGraph()
    graph(*tiny_inputs())
    program = graph._run.program
    for name in _runtime.REQUIRED + _runtime.STATE:
        bound = getattr(program.fn, name)
        assert bound.cfunc is getattr(program.lib, name)
        assert_matches_row(name, bound.restype, bound.argtypes, _abi.row(name))


def test_a_row_changed_without_its_caller_fails_the_call(backend, tmp_path, monkeypatch):
    """pfrt_set_input loses an argument in the .def but the front end still
    passes three: the step fails at the call instead of passing garbage."""
    _modified_def(tmp_path, monkeypatch, "PFRT_FN(pfrt_set_input, I32, I64, PTR, I64)",
                  "PFRT_FN(pfrt_set_input, I32, I64, PTR)")
    graph = TinyGraph()
    with pytest.raises(TypeError, match=r"pfrt_set_input\(\) takes 2 arguments \(PFRT_FN\(pfrt_set_input, "
                                        r"I32, I64, PTR\) at .*pfrt_abi\.def:\d+\), but the front end "
                                        r"passes 3"):
        graph(*tiny_inputs())
    # gaining an argument fails alike
    _modified_def(tmp_path, monkeypatch, "PFRT_FN(pfrt_set_input, I32, I64, PTR, I64)",
                  "PFRT_FN(pfrt_set_input, I32, I64, PTR, I64, I32)", "gained.def")
    with pytest.raises(TypeError, match=r"pfrt_set_input\(\) takes 4 arguments"):
        TinyGraph()(*tiny_inputs())
