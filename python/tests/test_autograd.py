"""Autograd on the Array type: gradients against hand-worked values and against PyTorch 1.13 for a
small MLP (the same weights copied over); no_grad's per-thread scope; check_gradients."""
import threading

import numpy as np
import pytest

import wick
from wick import nn, optim

torch = pytest.importorskip("torch")


def leaf(values, dtype=wick.float32):
    return wick.asarray(values, dtype=dtype).requires_grad_()


def test_sum_of_squares_gradient_is_2x():
    x = leaf([1.0, -2.0, 3.5])
    y = wick.sum(x * x)
    assert y.requires_grad and not y.is_leaf and x.is_leaf
    assert x.grad is None
    y.backward()
    assert x.grad.tolist() == [2.0, -4.0, 7.0]


def test_hand_worked_chain_and_matmul():
    # d/dx mean(3 x^2 + x) = (6 x + 1) / n
    x = leaf([0.0, 1.0, 2.0, 3.0])
    wick.mean(3 * x * x + x).backward()
    np.testing.assert_allclose(x.grad.tolist(), [(6 * v + 1) / 4 for v in [0.0, 1.0, 2.0, 3.0]], rtol=1e-6)
    # d/dA sum(A @ B) = ones @ B^T: each row of dA is the row sums of B; dB = A^T @ ones.
    a = leaf([[1.0, 2.0], [3.0, 4.0]])
    b = leaf([[5.0, 6.0, 7.0], [8.0, 9.0, 10.0]])
    wick.sum(a @ b).backward()
    assert a.grad.tolist() == [[18.0, 27.0], [18.0, 27.0]]
    assert b.grad.tolist() == [[4.0, 4.0, 4.0], [6.0, 6.0, 6.0]]


def test_gradients_accumulate_and_clear():
    x = leaf([1.0, 2.0])
    for _ in range(2):
        wick.sum(x * 3.0).backward()
    assert x.grad.tolist() == [6.0, 6.0]  # 3 + 3: backward adds, as PyTorch
    x.grad = None
    assert x.grad is None
    wick.sum(x * x).backward()
    assert x.grad.tolist() == [2.0, 4.0]
    x.grad = wick.asarray([0.5, 0.5])
    assert x.grad.tolist() == [0.5, 0.5]


def test_backward_with_a_seed_is_a_vector_jacobian_product():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x  # dy_i/dx_i = 2 x_i
    y.backward(seed=[1.0, 10.0, 100.0])
    assert x.grad.tolist() == [2.0, 40.0, 600.0]
    with pytest.raises(Exception):
        (x * x).backward()  # not one element: a seed is needed


def test_requires_grad_property_detach_and_errors():
    x = wick.asarray([1.0, 2.0])
    assert not x.requires_grad
    x.requires_grad = True
    assert x.requires_grad
    assert x.requires_grad_(False) is x and not x.requires_grad
    y = leaf([1.0, 2.0])
    d = (y * 2).detach()
    assert not d.requires_grad and d.is_leaf and d.tolist() == [2.0, 4.0]
    with pytest.raises(TypeError, match="floating-point"):
        wick.asarray([1, 2]).requires_grad = True


def test_no_grad_scope_nests_and_is_per_thread():
    x = leaf([1.0, 2.0])
    assert wick.autograd.is_grad_enabled()
    seen = {}

    def other_thread():
        seen["enabled"] = wick.autograd.is_grad_enabled()
        seen["records"] = (x * x).requires_grad

    with wick.no_grad():
        assert not (x * x).requires_grad
        with wick.no_grad():
            assert not wick.autograd.is_grad_enabled()
        assert not wick.autograd.is_grad_enabled()  # the inner scope restored the outer's state
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    assert seen == {"enabled": True, "records": True}
    assert wick.autograd.is_grad_enabled() and (x * x).requires_grad

    @wick.no_grad()
    def f(v):
        return v * v

    assert not f(x).requires_grad and wick.autograd.is_grad_enabled()


def test_check_gradients_agrees_for_a_smooth_function():
    a = wick.asarray([[0.3, -1.2], [0.7, 2.0]], dtype=wick.float64)
    b = wick.asarray([[1.5, 0.1], [-0.4, 0.9]], dtype=wick.float64)
    r = wick.autograd.check_gradients(lambda p, q: wick.tanh(p @ q) * wick.exp(p), [a, b])
    assert r.max_error < 1e-6, r.worst


def _mlp(seed):
    store = nn.VarStore(seed=seed)
    root = store.root()
    model = nn.Sequential(nn.Linear(root / "0", 6, 16), nn.ReLU(), nn.Linear(root / "2", 16, 8), nn.Tanh(),
                          nn.Linear(root / "4", 8, 4))
    return store, model


def _torch_copy(store):
    tm = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8), torch.nn.Tanh(),
                             torch.nn.Linear(8, 4))
    with torch.no_grad():
        for name, p in tm.named_parameters():
            p.copy_(torch.from_numpy(np.asarray(store[name]).copy()))
    return tm


def test_mlp_gradients_match_torch():
    store, model = _mlp(seed=3)
    tm = _torch_copy(store)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10, 6)).astype(np.float32)
    labels = rng.integers(0, 4, size=10)
    loss = nn.cross_entropy(model(wick.asarray(x)), wick.asarray(labels))
    loss.backward()
    tloss = torch.nn.functional.cross_entropy(tm(torch.from_numpy(x)), torch.from_numpy(labels))
    tloss.backward()
    assert float(loss) == pytest.approx(tloss.item(), rel=1e-5)
    wick_params = dict(zip(store.names(), store.parameters()))
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(np.asarray(wick_params[name].grad), p.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=name)


def _step_both(rng, model, opt, tm, topt):
    """One MSE step on the same random batch in Wick and in PyTorch."""
    x = rng.standard_normal((8, 6)).astype(np.float32)
    t = rng.standard_normal((8, 4)).astype(np.float32)
    opt.zero_grad()
    nn.mse_loss(model(wick.asarray(x)), wick.asarray(t)).backward()
    opt.step()
    topt.zero_grad()
    torch.nn.functional.mse_loss(tm(torch.from_numpy(x)), torch.from_numpy(t)).backward()
    topt.step()


@pytest.mark.parametrize("which", ["sgd", "adam", "adamw"])
def test_optimizer_steps_match_torch(which):
    store, model = _mlp(seed=5)
    tm = _torch_copy(store)
    if which == "sgd":
        opt = optim.SGD(store.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
        topt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
    elif which == "adam":
        opt = optim.Adam(store.parameters(), lr=1e-2, weight_decay=1e-3)
        topt = torch.optim.Adam(tm.parameters(), lr=1e-2, weight_decay=1e-3)
    else:
        opt = optim.AdamW(store.parameters(), lr=1e-2)
        topt = torch.optim.AdamW(tm.parameters(), lr=1e-2)
    rng = np.random.default_rng(1)
    for _ in range(4):
        _step_both(rng, model, opt, tm, topt)
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(np.asarray(store[name]), p.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    assert all(p.grad is not None for p in store.parameters())
    opt.zero_grad()
    assert all(p.grad is None for p in store.parameters())


def test_adam_resumed_from_its_state_dict_matches_torch_uninterrupted():
    store, model = _mlp(seed=6)
    tm = _torch_copy(store)
    topt = torch.optim.Adam(tm.parameters(), lr=1e-2)
    opt = optim.Adam(store.parameters(), lr=1e-2)
    rng = np.random.default_rng(2)
    for step in range(4):
        if step == 2:  # a new optimizer, resumed from the first one's state (m, v and the step count)
            state = opt.state_dict()
            opt = optim.Adam(store.parameters(), lr=1e-2)
            opt.load_state_dict(state)
        _step_both(rng, model, opt, tm, topt)
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(np.asarray(store[name]), p.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    with pytest.raises(Exception):
        optim.Adam(store.parameters(), lr=1e-2).load_state_dict({"no such entry": wick.zeros((1,))})


def test_sgd_step_hand_worked():
    p = leaf([1.0, -1.0])
    opt = optim.SGD([p], lr=0.1)
    assert opt.lr == 0.1
    wick.sum(p * p).backward()  # grad 2p
    opt.step()
    np.testing.assert_allclose(p.tolist(), [0.8, -0.8], rtol=1e-6)
    opt.lr = 0.5
    opt.zero_grad()
    wick.sum(p * p).backward()
    opt.step()
    np.testing.assert_allclose(p.tolist(), [0.0, 0.0], atol=1e-7)
