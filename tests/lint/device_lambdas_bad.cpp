// SPDX-License-Identifier: BSD-3-Clause
// The lint's known-bad snippet (scripts/lint-device.py --expect-marked): every
// line marked LINT-EXPECT holds a device lambda nvcc rejects; the others must pass.
// Not built with the project; g++ accepts all of it. With the stand-ins below,
//   nvcc -std=c++17 --extended-lambda -x cu -c device_lambdas_bad.cpp
// (CUDA 13) rejects the marked lines: the access errors first; the private type in a
// signature (drain_param) only in the stub compilation, once the others are gone.
#define KOKKOS_LAMBDA [=] __host__ __device__
#define KOKKOS_CLASS_LAMBDA [ =, *this ] __host__ __device__
template <class F> __global__ void kernel(F f, int n) { if (int(threadIdx.x) < n) f(int(threadIdx.x)); }
template <class F> void parallel_for(int n, F f) { kernel<<<1, 32>>>(f, n); }

// Fine: a namespace-scope function.
void scale(float* x, float a, int n) {
  parallel_for(n, KOKKOS_LAMBDA(int i) { x[i] *= a; });
}

class Optimizer {
 public:
  void update(float* p, int n);  // fine: public, no private types
  void drain_public(int which);  // fine: public, names the private type Slot only in its body
  void inline_public(float* p, int n) {
    parallel_for(n, KOKKOS_LAMBDA(int i) { p[i] = 0; });  // fine
  }

 protected:
  void inline_protected(float* p, int n) {
    parallel_for(n, KOKKOS_LAMBDA(int i) { p[i] = 1; });  // LINT-EXPECT
  }

 private:
  struct Slot {
    float* part;
    int size;
  };
  void drain(Slot& s);
  Slot slots_[2];

 public:
  void drain_param(Slot& s);     // public, but its signature names the private type Slot
  void drain_capture(int which);  // public, but captures a Slot
};

void Optimizer::update(float* p, int n) {
  parallel_for(n, KOKKOS_LAMBDA(int i) { p[i] -= 1; });
}

void Optimizer::drain(Slot& s) {
  float* part = s.part;
  parallel_for(s.size, KOKKOS_LAMBDA(int i) { part[i] = 0; });  // LINT-EXPECT
}

void Optimizer::drain_public(int which) {
  Slot& s = slots_[which];
  float* part = s.part;
  parallel_for(s.size, KOKKOS_LAMBDA(int i) { part[i] = 0; });
}

void Optimizer::drain_param(Slot& s) {
  float* part = s.part;
  parallel_for(s.size, KOKKOS_LAMBDA(int i) { part[i] = 0; });  // LINT-EXPECT
}

void Optimizer::drain_capture(int which) {
  Slot s = slots_[which];
  parallel_for(s.size, KOKKOS_LAMBDA(int i) { s.part[i] = 0; });  // LINT-EXPECT
}

class Model {
  // private by default in a class
  void step(float* p, int n) {
    parallel_for(n, KOKKOS_CLASS_LAMBDA(int i) { p[i] = float(i); });  // LINT-EXPECT
  }

 public:
  void run(float* p, int n) { step(p, n); }
};

template <class S>
class Adam {
 public:
  void update(S* p, int n);

 private:
  void moments(S* m, int n);
};

template <class S>
void Adam<S>::update(S* p, int n) {
  parallel_for(n, KOKKOS_LAMBDA(int i) { p[i] *= S(2); });  // fine
}

template <class S>
void Adam<S>::moments(S* m, int n) {
  parallel_for(n, KOKKOS_LAMBDA(int i) { m[i] = S(0); });  // LINT-EXPECT
}

struct Plain {
  void go(float* p, int n) {
    parallel_for(n, KOKKOS_LAMBDA(int i) { p[i] = 2; });  // fine: struct members are public
  }
};

template class Adam<float>;
