// SPDX-License-Identifier: Apache-2.0
//===-- preload/sys/next_symbol.cc - dlsym(RTLD_NEXT) without dlsym --------===//
//
// The lookup follows glibc's do_lookup_x and check_match (elf/dl-lookup.c):
// the GNU hash's Bloom filter, its bucket and chain, then the symbol: defined,
// a function or untyped, global or weak, and of the version asked for (with
// none asked, an unversioned symbol or the default version of a versioned
// one: dlsym's DL_LOOKUP_RETURN_NEWEST, never a hidden compatibility
// version such as pthread_cond_wait@GLIBC_2.2.5).
//===----------------------------------------------------------------------===//
#include "preload/sys/next_symbol.h"

#include "preload/sys/raw.h"

#include <elf.h>
#include <link.h>

#include <atomic>

namespace gotrace::sys {
namespace {

struct Object {
  uintptr_t base;
  const uint32_t* gnu_hash;  // DT_GNU_HASH
  const ElfW(Sym)* symtab;
  const char* strtab;
  const uint16_t* versym;    // DT_VERSYM, or nullptr (unversioned object)
  const ElfW(Verdef)* verdef;  // DT_VERDEF, or nullptr
};

constexpr int kMaxObjects = 128;
GT_LARGE_BSS Object g_objects[kMaxObjects];
int g_nobjects = 0;
// Every object of the scope after ours was recorded (none stopped the list:
// see Add), so a name none of them defines is defined nowhere in it.
bool g_complete = false;
bool g_tsan = false;  // libtsan seen (TsanLoaded)
// 0: not recorded yet, 1: being recorded, 2: recorded.
std::atomic<int> g_state{0};

struct Scan {
  uintptr_t self;
  bool after;  // the object holding `self` was met: the next ones count
};

// One object of the search scope, after ours: recorded. Returns 1 when no
// later object may be consulted.
int Add(uintptr_t base, const char* name, const ElfW(Dyn)* dyn) {
  if (dyn == nullptr) return 0;
  // The kernel's vDSO is no library of the search scope (and its dynamic
  // section is not relocated).
  if (name == nullptr) name = "";
  if (StartsWith(name, "linux-vdso") || StartsWith(name, "linux-gate")) return 0;
  if (g_nobjects == kMaxObjects) return 1;
  Object o{};
  o.base = base;
  // ld.so relocates these entries in place on x86-64 (not everywhere): an
  // address below the load base is still an offset.
  auto at = [&](ElfW(Addr) v) { return v < o.base ? o.base + v : v; };
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_GNU_HASH: o.gnu_hash = reinterpret_cast<const uint32_t*>(at(d->d_un.d_ptr)); break;
      case DT_SYMTAB: o.symtab = reinterpret_cast<const ElfW(Sym)*>(at(d->d_un.d_ptr)); break;
      case DT_STRTAB: o.strtab = reinterpret_cast<const char*>(at(d->d_un.d_ptr)); break;
      case DT_VERSYM: o.versym = reinterpret_cast<const uint16_t*>(at(d->d_un.d_ptr)); break;
      case DT_VERDEF: o.verdef = reinterpret_cast<const ElfW(Verdef)*>(at(d->d_un.d_ptr)); break;
      default: break;
    }
  }
  // An object without a GNU hash table (very old, or built with
  // --hash-style=sysv) ends what this lookup can answer: its symbols might
  // be the ones asked for, so no object after it may be consulted.
  if (o.gnu_hash == nullptr || o.symtab == nullptr || o.strtab == nullptr) return 1;
  g_objects[g_nobjects++] = o;
  return 0;
}

// libtsan.so.N, by its file name.
bool IsTsan(const char* path) {
  const char* base = path;
  for (const char* p = path; *p != '\0'; ++p)
    if (*p == '/') base = p + 1;
  return StartsWith(base, "libtsan.so");
}

int OnObject(dl_phdr_info* info, size_t, void* arg) {
  auto* scan = static_cast<Scan*>(arg);
  if (info->dlpi_name != nullptr && IsTsan(info->dlpi_name)) g_tsan = true;
  const ElfW(Dyn)* dyn = nullptr;
  bool holds_self = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + ph.p_vaddr);
    if (ph.p_type == PT_LOAD && scan->self >= info->dlpi_addr + ph.p_vaddr &&
        scan->self < info->dlpi_addr + ph.p_vaddr + ph.p_memsz) {
      holds_self = true;
    }
  }
  if (holds_self) {
    scan->after = true;
    return 0;
  }
  if (!scan->after) return 0;
  return Add(info->dlpi_addr, info->dlpi_name, dyn);
}

// Problem: dl_iterate_phdr is a function a sanitizer runtime intercepts, and
// ThreadSanitizer's initialisation (from the executable's preinit array,
// before our constructor) calls dlsym, which mallocs: our malloc's first
// call looked the real one up here, through TSan's dl_iterate_phdr, whose
// pointer to the real one was not set yet: a jump to address 0 in every
// TSan-built program. So the loader's list of objects is read as data
// (_r_debug: the base namespace's link maps, in search order, as
// dl_iterate_phdr walks them), our object told by its dynamic section;
// dl_iterate_phdr only if the list is not there.
extern "C" ElfW(Dyn) _DYNAMIC[] __attribute__((visibility("hidden")));
extern "C" const char __ehdr_start[] __attribute__((visibility("hidden")));
extern "C" char _end[] __attribute__((visibility("hidden")));

void Record(uintptr_t self) {
  g_nobjects = 0;
  g_complete = false;
  // (The object asked about is this code's own: ours, or a test's.)
  const bool own =
      self >= reinterpret_cast<uintptr_t>(__ehdr_start) && self < reinterpret_cast<uintptr_t>(_end);
  const link_map* first = own ? _r_debug.r_map : nullptr;
  bool seen_self = false;
  for (const link_map* m = first; m != nullptr; m = m->l_next) {
    if (m->l_name != nullptr && IsTsan(m->l_name)) g_tsan = true;
    if (m->l_ld == _DYNAMIC) {
      seen_self = true;
      continue;
    }
    if (seen_self && Add(m->l_addr, m->l_name, m->l_ld) != 0) return;
  }
  if (seen_self) {
    g_complete = true;
    return;
  }
  // (Nothing was added: objects count only after ours.)
  Scan scan{self, false};
  g_complete = dl_iterate_phdr(OnObject, &scan) == 0 && scan.after;
}

// The name of version index `ndx` in o, or nullptr.
const char* VersionName(const Object& o, uint16_t ndx) {
  if (o.verdef == nullptr) return nullptr;
  const auto* vd = o.verdef;
  for (int guard = 0; guard < 4096; ++guard) {
    if (vd->vd_ndx == ndx) {
      const auto* aux = reinterpret_cast<const ElfW(Verdaux)*>(reinterpret_cast<const char*>(vd) + vd->vd_aux);
      return o.strtab + aux->vda_name;
    }
    if (vd->vd_next == 0) break;
    vd = reinterpret_cast<const ElfW(Verdef)*>(reinterpret_cast<const char*>(vd) + vd->vd_next);
  }
  return nullptr;
}

enum class Found { kNo, kYes, kAsk };  // kAsk: dlsym must answer (an IFUNC)

Found FindIn(const Object& o, const char* name, uint32_t hash, const char* version, void** out) {
  const uint32_t* gh = o.gnu_hash;
  const uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2], bloom_shift = gh[3];
  if (nbuckets == 0 || bloom_size == 0) return Found::kNo;
  const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(gh + 4);
  const auto* buckets = reinterpret_cast<const uint32_t*>(bloom + bloom_size);
  const uint32_t* chain = buckets + nbuckets;
  constexpr uint32_t kBits = sizeof(ElfW(Addr)) * 8;
  const ElfW(Addr) word = bloom[(hash / kBits) & (bloom_size - 1)];
  const ElfW(Addr) mask = (ElfW(Addr){1} << (hash % kBits)) | (ElfW(Addr){1} << ((hash >> bloom_shift) % kBits));
  if ((word & mask) != mask) return Found::kNo;
  uint32_t i = buckets[hash % nbuckets];
  if (i < symoffset) return Found::kNo;
  for (;; ++i) {
    const uint32_t h = chain[i - symoffset];
    if ((h | 1) == (hash | 1)) {
      const ElfW(Sym)& s = o.symtab[i];
      const unsigned type = ELF64_ST_TYPE(s.st_info), bind = ELF64_ST_BIND(s.st_info);
      const bool usable = s.st_shndx != SHN_UNDEF && (s.st_value != 0 || type == STT_TLS) &&
                          (type == STT_FUNC || type == STT_NOTYPE || type == STT_GNU_IFUNC) &&
                          (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE);
      if (usable && StrEq(name, o.strtab + s.st_name)) {
        bool match = true;
        if (o.versym != nullptr) {
          const uint16_t v = o.versym[i];
          const uint16_t ndx = v & 0x7fff;
          if (version != nullptr) {
            const char* vn = VersionName(o, ndx);
            match = vn != nullptr && StrEq(version, vn);
          } else {
            match = ndx < 2 || (v & 0x8000) == 0;  // unversioned, or the default version
          }
        } else if (version != nullptr) {
          return Found::kAsk;  // a version asked of an unversioned object: dlvsym's rules
        }
        if (match) {
          if (type == STT_GNU_IFUNC) return Found::kAsk;
          *out = reinterpret_cast<void*>(o.base + s.st_value);
          return Found::kYes;
        }
      }
    }
    if (h & 1) break;
  }
  return Found::kNo;
}

void* Lookup(const char* name, const char* version, bool* missing) {
  uint32_t hash = 5381;
  for (const char* p = name; *p != '\0'; ++p) hash = hash * 33 + static_cast<unsigned char>(*p);
  for (int k = 0; k < g_nobjects; ++k) {
    void* p = nullptr;
    const Found f = FindIn(g_objects[k], name, hash, version, &p);
    if (f == Found::kYes) return p;
    if (f == Found::kAsk) return nullptr;
  }
  // (With a version asked, another version may be there: only the default
  // one's absence says the name is not.)
  if (missing != nullptr) *missing = g_complete && version == nullptr;
  return nullptr;
}

}  // namespace

bool NextSymbolsInit(const void* self) {
  int expected = 0;
  if (!g_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    return g_state.load(std::memory_order_acquire) == 2 && g_nobjects > 0;
  }
  Record(reinterpret_cast<uintptr_t>(self));
  g_state.store(2, std::memory_order_release);
  return g_nobjects > 0;
}

void* NextSymbol(const char* name, const char* version, bool* missing) {
  if (missing != nullptr) *missing = false;
  if (g_state.load(std::memory_order_acquire) != 2) {
    // Before Init (a malloc during start-up): record now, unless another
    // thread is (then dlsym answers this one).
    NextSymbolsInit(reinterpret_cast<const void*>(&NextSymbol));
    if (g_state.load(std::memory_order_acquire) != 2) return nullptr;
  }
  return Lookup(name, version, missing);
}

void* NextSymbolAfter(const void* start, const char* name, const char* version) {
  Record(reinterpret_cast<uintptr_t>(start));
  g_state.store(2, std::memory_order_release);
  return Lookup(name, version, nullptr);
}

bool TsanLoaded() { return g_tsan; }

}  // namespace gotrace::sys
