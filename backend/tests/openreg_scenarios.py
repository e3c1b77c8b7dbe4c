"""Cases from PyTorch's own tests for an out-of-tree (PrivateUse1) backend, the OpenReg suite
(test/cpp_extensions/open_registration_extension/torch_openreg/tests/ in the PyTorch sources:
test_device.py, test_rng.py, test_memory.py, test_streams.py, test_event.py, test_storage.py,
test_misc.py), adapted to the `neuron` device: `openreg` -> `neuron`, `torch.openreg` ->
`torch.neuron`. Runs in ONE process with NEURON_EMULATOR_DEVICES=2 (OpenReg has two devices).
Cases that do not apply are listed, with the reason, in backend/README.md.
"""

import threading

from scenarios import SCENARIOS, main, scenario

SCENARIOS.clear()


def raises(exc, fn, match=""):
    try:
        fn()
    except exc as e:
        assert match in str(e), e
    else:
        raise AssertionError(f"{fn} did not raise {exc.__name__}")


# --- test_device.py -----------------------------------------------------------------------------

@scenario
def device_count_switch_and_context():
    import torch

    assert torch.accelerator.device_count() == 2
    torch.accelerator.set_device_index(1)
    assert torch.accelerator.current_device_index() == 1
    torch.accelerator.set_device_index(0)
    assert torch.accelerator.current_device_index() == 0
    device = torch.accelerator.current_device_index()
    with torch.accelerator.device_index(None):
        assert torch.accelerator.current_device_index() == device
    with torch.accelerator.device_index(1):
        assert torch.accelerator.current_device_index() == 1
    assert torch.accelerator.current_device_index() == device


@scenario
def invalid_device_index():
    import torch

    raises(RuntimeError, lambda: torch.accelerator.set_device_index(2), "invalid device index")


@scenario
def tensor_device_and_switch_persistence():
    import torch

    assert torch.randn(2, 3, device="neuron").device.type == "neuron"
    x = torch.randn(2, 3, device="neuron:1")
    assert x.device.type == "neuron" and x.device.index == 1
    old = torch.accelerator.current_device_index()
    try:
        torch.accelerator.set_device_index(1)
        assert torch.randn(2, 3, device="neuron").device.index == 1
        assert torch.randn(3, 3, device="neuron").device.index == 1
    finally:
        torch.accelerator.set_device_index(old)
    for i in range(torch.accelerator.device_count()):
        torch.accelerator.set_device_index(i)
        assert torch.accelerator.current_device_index() == i
    torch.accelerator.set_device_index(0)


@scenario
def current_device_after_operations_and_context_restoration():
    import torch

    original = torch.accelerator.current_device_index()
    z = torch.randn(2, 3, device="neuron") + torch.randn(2, 3, device="neuron")
    assert z.device.index == original and torch.sum(z).device.index == original
    torch.accelerator.set_device_index(1)
    a = torch.randn(5, 5, device="neuron")
    assert a.device.index == 1 and torch.matmul(a, a).device.index == 1
    torch.accelerator.set_device_index(original)
    try:
        with torch.accelerator.device_index(1):
            assert torch.randn(2, 2, device="neuron").device.index == 1
            raise ValueError("Test exception")
    except ValueError:
        pass
    assert torch.accelerator.current_device_index() == original
    try:
        with torch.accelerator.device_index(1), torch.accelerator.device_index(0):
            raise RuntimeError("Nested exception")
    except RuntimeError:
        pass
    assert torch.accelerator.current_device_index() == original


@scenario
def concurrent_device_operations():
    import torch

    errors = []
    barrier = threading.Barrier(4)

    def worker(tid):
        try:
            barrier.wait()
            for _ in range(20):
                idx = tid % 2
                torch.accelerator.set_device_index(idx)
                x = torch.randn(10, 10, device="neuron")
                r = torch.sum(torch.matmul(x, x))
                if torch.accelerator.current_device_index() != idx or \
                        x.device.index != idx or r.device.index != idx:
                    errors.append(f"thread {tid}: wrong device")
        except Exception as e:
            errors.append(f"thread {tid}: {e}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [], errors


@scenario
def device_state_after_errors():
    import torch

    original = torch.accelerator.current_device_index()
    raises(RuntimeError, lambda: torch.matmul(torch.randn(5, 5, device="neuron"),
                                              torch.randn(3, 3, device="neuron")))
    assert torch.accelerator.current_device_index() == original
    z = torch.randn(5, 5, device="neuron")
    torch.matmul(z, torch.randn(5, 5, device="neuron"))


# --- test_rng.py --------------------------------------------------------------------------------

@scenario
def rng_generator_state_and_seeds():
    import torch

    g = torch.Generator(device="neuron:1")
    assert g.device.type == "neuron" and g.device.index == 1
    state = torch.neuron.get_rng_state(0)
    torch.neuron.set_rng_state(state, 0)
    torch.neuron.set_rng_state_all(torch.neuron.get_rng_state_all())
    torch.neuron.manual_seed_all(42)
    assert torch.neuron.initial_seed() == 42
    torch.neuron.seed_all()
    s1 = torch.neuron.initial_seed()
    torch.neuron.seed_all()
    assert s1 != torch.neuron.initial_seed()
    g = torch.Generator(device="neuron:0")
    g.manual_seed(42)
    assert g.initial_seed() == 42


# --- test_memory.py (the accounting parts) ------------------------------------------------------

@scenario
def memory_allocated_follows_tensors():
    import torch

    torch.neuron.empty_cache()
    before = torch.accelerator.memory_allocated(0)
    t = torch.empty(1024 * 1024, device="neuron:0", dtype=torch.uint8)
    assert torch.accelerator.memory_allocated(0) == before + 1024 * 1024
    assert torch.accelerator.max_memory_allocated(0) >= before + 1024 * 1024
    del t
    assert torch.accelerator.memory_allocated(0) == before
    torch.accelerator.reset_peak_memory_stats(0)
    assert torch.accelerator.max_memory_allocated(0) == before
    u = torch.empty(100, device="neuron:1", dtype=torch.uint8)
    assert torch.accelerator.memory_allocated(1) >= 100
    assert torch.accelerator.memory_allocated(0) == before
    stats = torch.accelerator.memory_stats(1)
    assert stats["allocated_bytes.all.current"] == torch.accelerator.memory_allocated(1)
    torch.accelerator.reset_accumulated_memory_stats(1)
    del u


# --- test_streams.py / test_event.py ------------------------------------------------------------

@scenario
def streams_and_events_basics():
    import torch

    stream = torch.neuron.Stream(device=1)
    assert stream.device_index == 1 and stream.query()
    stream.synchronize()
    with torch.neuron.stream(stream):
        assert torch.neuron.current_stream(1) == stream
    event = torch.neuron.Event(enable_timing=True)
    other = torch.neuron.Event(enable_timing=True)
    event.record(stream)
    other.record(stream)
    assert event.query() and other.elapsed_time(event) <= 0 <= event.elapsed_time(other)
    stream.wait_event(event)
    stream.wait_stream(torch.neuron.default_stream(1))
    raises(RuntimeError, lambda: torch.neuron.Event().elapsed_time(torch.neuron.Event()),
           "enable_timing")


# --- test_storage.py / test_misc.py: what applies -----------------------------------------------

@scenario
def distinct_data_ptrs_and_generated_methods():
    import torch

    a, b = torch.empty(4, device="neuron"), torch.empty(4, device="neuron")
    assert a.data_ptr() != b.data_ptr() and a.data_ptr() != 0
    assert a.is_neuron and not torch.empty(2).is_neuron
    assert torch.empty(2).neuron().is_neuron and torch.empty(2).neuron(1).device.index == 1
    m = torch.nn.Linear(2, 2).neuron()
    assert m.weight.is_neuron
    assert a[1:].data_ptr() == a.data_ptr() + 4  # views share the device data


@scenario
def serialization_map_location():
    import os
    import tempfile

    import torch

    tensor = torch.randn(3, 3, device="neuron")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.pt")
        torch.save(tensor, path)
        loaded_cpu = torch.load(path, map_location="cpu")
        assert loaded_cpu.is_cpu and torch.equal(loaded_cpu, tensor.cpu())
        loaded = torch.load(path, map_location="neuron:1")
        assert loaded.device.index == 1 and torch.equal(loaded.cpu(), tensor.cpu())


if __name__ == "__main__":
    main()
