"""Modules: parameters, buffers, names, init, state dicts, eager forward vs numpy."""

import math

import numpy as np
import pytest

import pipeflow as flow
from pipeflow import models, nn


def count(module):
    return sum(p.numel() for p in module.parameters())


def test_linear_parameters_and_init():
    layer = nn.Linear(784, 512)
    names = dict(layer.named_parameters())
    assert list(names) == ["weight", "bias"]
    assert layer.weight.shape == (512, 784) and layer.bias.shape == (512,)
    bound = 1 / math.sqrt(784)
    for p in (layer.weight, layer.bias):
        v = p.numpy()
        assert v.dtype == np.float32 and np.abs(v).max() <= bound
        assert np.abs(v).max() > 0.9 * bound  # spread over the whole interval
        assert p._init == "#pf.init<kaiming_uniform(784)>"
    assert abs(layer.weight.numpy().mean()) < 0.05 * bound
    assert nn.Linear(3, 2, bias=False).bias is None and count(nn.Linear(3, 2, bias=False)) == 6


def test_conv_parameters_and_init():
    conv = nn.Conv2d(6, 16, 5, groups=2)
    assert conv.weight.shape == (16, 3, 5, 5) and conv.bias.shape == (16,)
    fan_in = 3 * 5 * 5
    assert np.abs(conv.weight.numpy()).max() <= 1 / math.sqrt(fan_in)
    assert conv.weight._init == f"#pf.init<kaiming_uniform({fan_in})>"
    with pytest.raises(ValueError):
        nn.Conv2d(3, 4, 3, groups=2)


def test_batchnorm_buffers():
    bn = nn.BatchNorm2d(8)
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var"]
    np.testing.assert_array_equal(bn.running_mean.numpy(), np.zeros(8))
    np.testing.assert_array_equal(bn.running_var.numpy(), np.ones(8))
    np.testing.assert_array_equal(bn.weight.numpy(), np.ones(8))
    np.testing.assert_array_equal(bn.bias.numpy(), np.zeros(8))
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var"]


def test_reference_model_sizes():
    mlp = models.mlp()
    assert count(mlp) == (784 * 512 + 512) + (512 * 512 + 512) + (512 * 10 + 10)
    assert [type(m).__name__ for m in mlp] == ["Flatten", "Linear", "ReLU", "Linear", "ReLU", "Linear", "ReLU"]
    assert count(models.LeNet()) == 61706                 # LeNet-5 with a padded first conv
    assert count(models.resnet18()) == 11689512           # torchvision's resnet18()
    assert count(models.resnet50()) == 25557032           # torchvision's resnet50()
    names = [n for n, _ in models.resnet50().named_parameters()]
    assert names[:3] == ["conv1.weight", "bn1.weight", "bn1.bias"]
    assert "layer1.0.downsample.0.weight" in names and "fc.bias" == names[-1]
    assert sum(1 for _ in models.resnet50().buffers()) == 2 * 53


def test_nested_names_and_children():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
            self.head = nn.Linear(4, 2)

    b = Block()
    assert [n for n, _ in b.named_parameters()] == ["inner.0.weight", "inner.0.bias", "head.weight", "head.bias"]
    assert [n for n, _ in b.named_children()] == ["inner", "head"]
    assert [n for n, _ in b.named_modules()] == ["", "inner", "inner.0", "inner.1", "head"]
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, shared)
    assert len(list(seq.parameters())) == 2  # shared parameters are listed once


def test_module_registration_errors():
    class Bad(nn.Module):
        def __init__(self):
            self.layer = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match="super"):
        Bad()
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError):
        m.weight = flow.randn(2, 2)


def test_state_dict_round_trip():
    a, b = models.LeNet(), models.LeNet()
    assert not np.array_equal(a.features[0].weight.numpy(), b.features[0].weight.numpy())
    state = a.state_dict()
    assert list(state) == [n for n, _ in a.named_parameters()]
    result = b.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=name)
    x = flow.randn(2, 1, 28, 28)
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    # numpy values load too, and the copy does not alias the source
    b.load_state_dict({k: v.numpy() * 0 for k, v in state.items()})
    assert np.abs(a.features[0].weight.numpy()).max() > 0


def test_state_dict_errors():
    m = nn.Linear(3, 2)
    state = m.state_dict()
    with pytest.raises(RuntimeError, match="missing keys: bias"):
        m.load_state_dict({"weight": state["weight"]})
    assert m.load_state_dict({"weight": state["weight"]}, strict=False).missing_keys == ["bias"]
    with pytest.raises(RuntimeError, match="unexpected keys: extra"):
        m.load_state_dict(dict(state, extra=np.zeros(1)))
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        m.load_state_dict(dict(state, weight=np.zeros((3, 2))))


def test_to_global_sets_every_parameter_and_buffer():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    p = flow.placement("cpu", [0, 1])
    model.to_global(placement=p, sbp=[flow.sbp.split(0)])
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        assert t.is_global and t.placement == p and t.sbp == (flow.sbp.split(0),), name
        np.testing.assert_array_equal(t.numpy(), before[name])
        assert t.shape == before[name].shape
    model.to_consistent(sbp=flow.sbp.broadcast)
    assert all(t.sbp == (flow.sbp.broadcast,) for t in model.parameters())
    with pytest.raises(ValueError, match="not divisible"):
        nn.Linear(4, 3).to_global(p, flow.sbp.split(0))
    with pytest.raises(ValueError, match="needs both"):
        nn.Linear(4, 3).to_global(placement=p)


def test_train_eval_and_dropout():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    assert all(m.training for m in model.modules())
    model.eval()
    assert not any(m.training for m in model.modules())
    x = flow.randn(2, 4)
    np.testing.assert_array_equal(model(x).numpy(), model[0](x).numpy())
    model.train()
    with pytest.raises(NotImplementedError, match="runs only inside nn.Graph"):
        model(x)
    assert nn.Dropout(0.0)(x) is x
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


# Eager forward against numpy ------------------------------------------------------

def test_linear_relu_flatten_forward():
    layer = nn.Linear(12, 5)
    x = flow.randn(3, 1, 3, 4)
    flat = nn.Flatten()(x)
    assert flat.shape == (3, 12)
    y = nn.ReLU()(layer(flat)).numpy()
    ref = np.maximum(x.numpy().reshape(3, 12) @ layer.weight.numpy().T + layer.bias.numpy(), 0)
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)
    assert nn.Flatten(0, 1)(x).shape == (3, 3, 4) and nn.Identity()(x) is x


def _conv_reference(x, w, b, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - dil * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dil * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg, i * stride:i * stride + dil * (kh - 1) + 1:dil,
                           j * stride:j * stride + dil * (kw - 1) + 1:dil]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3)) + b[oc]
    return out


@pytest.mark.parametrize("stride,pad,dil,groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2)])
def test_conv2d_forward(stride, pad, dil, groups):
    conv = nn.Conv2d(4, 6, 3, stride=stride, padding=pad, dilation=dil, groups=groups)
    x = flow.randn(2, 4, 9, 8)
    ref = _conv_reference(x.numpy(), conv.weight.numpy(), conv.bias.numpy(), stride, pad, dil, groups)
    np.testing.assert_allclose(conv(x).numpy(), ref, rtol=1e-4, atol=1e-5)


def test_pooling_forward():
    x = flow.randn(2, 3, 6, 6)
    v = x.numpy()
    mp = nn.MaxPool2d(2)(x).numpy()
    np.testing.assert_array_equal(mp, v.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))
    ap = nn.AvgPool2d(2)(x).numpy()
    np.testing.assert_allclose(ap, v.reshape(2, 3, 3, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-5, atol=1e-6)
    padded = nn.MaxPool2d(3, stride=2, padding=1)(x)
    assert padded.shape == (2, 3, 3, 3)
    assert padded.numpy()[0, 0, 0, 0] == v[0, 0, :2, :2].max()
    ap_pad = nn.AvgPool2d(2, padding=1)(x).numpy()
    assert np.isclose(ap_pad[0, 0, 0, 0], v[0, 0, 0, 0] / 4)  # padding counts as zeros
    gap = nn.AdaptiveAvgPool2d(1)(x)
    assert gap.shape == (2, 3, 1, 1)
    np.testing.assert_allclose(gap.numpy()[..., 0, 0], v.mean(axis=(2, 3)), rtol=1e-5)
    with pytest.raises(ValueError):
        nn.AdaptiveAvgPool2d(2)


def test_batchnorm_forward_and_running_stats():
    bn = nn.BatchNorm2d(3, momentum=0.2)
    x = flow.tensor(np.random.default_rng(1).normal(2.0, 3.0, (4, 3, 5, 5)).astype(np.float32))
    y = bn(x).numpy()
    np.testing.assert_allclose(y.mean(axis=(0, 2, 3)), 0, atol=1e-5)
    np.testing.assert_allclose(y.var(axis=(0, 2, 3)), 1, atol=1e-3)
    v = x.numpy().astype(np.float64)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.2 * v.mean(axis=(0, 2, 3)), rtol=1e-5)
    unbiased = v.var(axis=(0, 2, 3), ddof=1)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.8 + 0.2 * unbiased, rtol=1e-5)
    bn.eval()
    ref = (v - bn.running_mean.numpy().reshape(1, 3, 1, 1)) / np.sqrt(bn.running_var.numpy().reshape(1, 3, 1, 1) + 1e-5)
    np.testing.assert_allclose(bn(x).numpy(), ref, rtol=1e-4, atol=1e-5)


def test_cross_entropy_forward():
    logits = flow.randn(5, 4)
    labels = flow.tensor([0, 3, 1, 1, 2])
    z = logits.numpy().astype(np.float64)
    ref = np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(5), labels.numpy()])
    assert np.isclose(nn.CrossEntropyLoss()(logits, labels).item(), ref, rtol=1e-6)
    with pytest.raises(ValueError):
        nn.CrossEntropyLoss(reduction="sum")


def test_resnet_and_lenet_forward_shapes():
    assert models.resnet18(num_classes=10)(flow.randn(2, 3, 32, 32)).shape == (2, 10)
    assert models.LeNet()(flow.randn(3, 1, 28, 28)).shape == (3, 10)


def test_eager_shape_errors():
    with pytest.raises(ValueError, match="in_features=784"):
        nn.Linear(784, 10)(flow.randn(2, 1, 28, 28))
    with pytest.raises(ValueError, match="input channels"):
        nn.Conv2d(3, 4, 3)(flow.randn(1, 2, 8, 8))
