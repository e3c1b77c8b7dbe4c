// A measuring prototype, NOT the emulator: the smallest PrivateUse1 backend in C++ (host memory,
// one device, every op the CPU kernel's), built by benchmarks/cpp_backend_gpt2.py to put a
// number on docs/emulator.md's "A C++ extension?" proposal: what a training step costs when no
// Python runs per op. It has none of the emulator's behaviour (fallback lists, memory limits,
// faults, compile backend, RNG per device); it is never shipped or installed.
//
// Layout as in PyTorch's own out-of-tree example (OpenReg): an allocator, a device guard, the
// few kernels a device must own (factories, views, copies, resize, scalars) and one boxed
// fallback that runs every other op through at::native::cpu_fallback (inputs copied to CPU
// tensors, the CPU kernel, results and mutated inputs copied back).

#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/as_strided_cpu_dispatch.h>
#include <ATen/ops/set_cpu_dispatch.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/extension.h>
#include <torch/library.h>

namespace {

constexpr c10::DispatchKeySet kDeviceKeys(c10::DispatchKey::PrivateUse1);

void release(void* ptr) { c10::free_cpu(ptr); }

struct HostMemory final : at::Allocator {
  at::DataPtr allocate(size_t nbytes) override {
    void* ptr = nbytes ? c10::alloc_cpu(nbytes) : nullptr;
    return {ptr, ptr, &release, c10::Device(c10::DeviceType::PrivateUse1, 0)};
  }
  at::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

HostMemory host_memory;
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &host_memory);

struct OneDeviceGuard final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }
  c10::Device exchangeDevice(c10::Device) const override { return here(); }
  c10::Device getDevice() const override { return here(); }
  void setDevice(c10::Device) const override {}
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, here());
  }
  c10::Stream exchangeStream(c10::Stream) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, here());
  }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
  static c10::Device here() { return c10::Device(c10::DeviceType::PrivateUse1, 0); }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, OneDeviceGuard);

struct Hooks final : at::PrivateUse1HooksInterface {  // the autograd engine asks for them
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  bool isAvailable() const override { return true; }
  c10::DeviceIndex deviceCount() const override { return 1; }
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
};

const bool hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new Hooks());
  return true;
}();

at::Tensor cpu_view(const at::Tensor& t) {  // the same bytes, seen as a CPU tensor
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout>, std::optional<c10::Device>,
                               std::optional<bool>, std::optional<c10::MemoryFormat> format) {
  return at::detail::empty_generic(size, &host_memory, kDeviceKeys,
                                   c10::dtype_or_default(dtype), format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout>,
                         std::optional<c10::Device>, std::optional<bool>) {
  return at::detail::empty_strided_generic(size, stride, &host_memory, kDeviceKeys,
                                           c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size,
                      c10::SymIntArrayRef stride, std::optional<c10::SymInt> offset) {
  return at::cpu::as_strided_symint(self, size, stride, std::move(offset));
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size,
                         c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
                                    C10_AS_INTARRAYREF_SLOW(stride));
}

const at::Tensor& resize(const at::Tensor& self, c10::SymIntArrayRef size,
                         std::optional<at::MemoryFormat> format) {
  return at::native::resize_(self, C10_AS_INTARRAYREF_SLOW(size), format);
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  at::Tensor to = dst.is_cpu() ? dst : cpu_view(dst);
  const at::Tensor from = self.is_cpu() ? self : cpu_view(self);
  at::native::copy_(to, from, non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  return at::native::_local_scalar_dense_cpu(cpu_view(self));
}

at::Tensor& set_storage(at::Tensor& self, at::Storage storage, int64_t offset,
                        c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::cpu::set_(self, storage, offset, size, stride);
}

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  at::native::cpu_fallback(op, stack);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("as_strided", as_strided);
  m.impl("view", view);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("resize_", resize);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("set_.source_Storage_storage_offset", set_storage);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}
