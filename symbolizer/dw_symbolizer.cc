// SPDX-License-Identifier: Apache-2.0
//===-- symbolizer/dw_symbolizer.cc - PC to function/file/line with libdw -===//
//
// One Dwfl per distinct (file, load bias): the module map of a process can
// reuse an address range across epochs, and a Dwfl cannot hold overlapping
// modules. Each module is opened on first use and caches its answers per
// address. Within a compile unit the outermost code DIEs (subprograms, also
// those nested in namespaces and classes) are indexed by address once, so a
// lookup is a binary search plus a short descent through the function's
// lexical blocks and inlined subroutines.
//
// DwOptions::system_dwarf = false (the exit-time encode's default): a system
// library whose DWARF would come from a separate debug file is symbolized
// from its symbol table only. libdw decompresses every compressed debug
// section when it opens a file's DWARF (libc6-dbg's libc: 2.3 MB of
// .debug_info alone, ~50 ms in zlib), while the debug file's .symtab is
// stored uncompressed and is all a name needs: libdwfl's symbol table lookup
// opens the debug file as plain ELF and never touches its DWARF.
//===----------------------------------------------------------------------===//
#include "symbolizer/dw_symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <libelf.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "symbolizer/debuginfod.h"
#include "symbolizer/rust_demangle.h"

namespace gotrace {
namespace {

constexpr uint64_t kNever = UINT64_MAX;  // not unloaded
constexpr int kMaxDepth = 64;

// The root of the separate debug files: /usr/lib/debug (where Debian's
// -dbgsym packages put .build-id/xx/rest.debug), or $GOTRACE_DEBUG_ROOT
// (debug files unpacked elsewhere; tests).
std::string DebugRoot() {
  const char* env = std::getenv("GOTRACE_DEBUG_ROOT");
  std::string r = env != nullptr && env[0] == '/' ? env : "/usr/lib/debug";
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return r;
}

// Problem: dwfl_standard_find_debuginfo (and dwfl_build_id_find_elf) fall
// back to debuginfod when local lookup fails: libdw then dlopens
// libdebuginfod, which drags in curl, gnutls, libcrypto and Kerberos (about
// 30 libraries, ~8 ms, their constructors) even when DEBUGINFOD_URLS is
// unset, and with it set asks a server over the network bounded only by
// libdebuginfod's own limits (90 s without progress, per request). Inside a
// traced process at exit neither is acceptable, and `gotrace encode` wants a
// budget it can enforce, so the symbolizer never calls them: it looks only
// in the standard local places, /usr/lib/debug/.build-id/xx/rest.debug, then
// the .gnu_debuglink name next to the file, in its .debug/ directory and
// under /usr/lib/debug, and accepts a candidate only if its build-id (or,
// without one, the debuglink CRC) matches. Online (not offline, and
// DEBUGINFOD_URLS set), a module found in none of them is then asked of
// debuginfod by build-id, on the encode's budget (symbolizer/debuginfod.h).

uint32_t Crc32Ieee(uint32_t crc, const unsigned char* p, size_t n) {
  static uint32_t table[256];
  static bool ready = false;
  if (!ready) {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    ready = true;
  }
  crc = ~crc;
  while (n--) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}

bool FileCrcMatches(int fd, GElf_Word want) {
  std::vector<unsigned char> buf(1 << 16);
  uint32_t crc = 0;
  off_t off = 0;
  for (;;) {
    const ssize_t n = pread(fd, buf.data(), buf.size(), off);
    if (n < 0) return false;
    if (n == 0) break;
    crc = Crc32Ieee(crc, buf.data(), static_cast<size_t>(n));
    off += n;
  }
  return crc == want;
}

// The build-id note of the ELF file open on fd, or an empty string.
std::string BuildIdOf(int fd) {
  std::string id;
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return id;
  const void* bits = nullptr;
  const ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
  if (n > 0) id.assign(static_cast<const char*>(bits), static_cast<size_t>(n));
  elf_end(elf);
  return id;
}

int LocalFindElf(Dwfl_Module*, void**, const char*, Dwarf_Addr, char**, Elf**) {
  return -1;  // modules are reported with their path: nothing to find
}

// The build-id of the dwz supplementary file ("alt file": debug info that
// several files share) that the ELF file at `path` names in its
// .gnu_debugaltlink as `name`; empty if it names none or another.
//
// Problem: libdwfl asks the find_debuginfo callback for the alt file too,
// passing the debug file as file_name, the alt file's name as
// debuglink_file and a CRC of 0. Looked up by the module's build-id, that
// question found the module's own debug file, which libdw then read as
// the alt file: strings and DIEs at the alt file's offsets in the wrong
// file. An alt file is looked up by its own build-id.
std::string AltFileBuildId(const char* path, const char* name) {
  std::string id;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return id;
  elf_version(EV_CURRENT);
  if (Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr); elf != nullptr) {
    size_t shstrndx = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
      for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr;
           scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type == SHT_NOBITS) continue;
        const char* n = elf_strptr(elf, shstrndx, sh.sh_name);
        if (n == nullptr || std::strcmp(n, ".gnu_debugaltlink") != 0) continue;
        // The file name, NUL, then the build-id bytes.
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (data == nullptr || data->d_buf == nullptr) break;
        const char* b = static_cast<const char*>(data->d_buf);
        const char* nul = static_cast<const char*>(std::memchr(b, '\0', data->d_size));
        if (nul != nullptr && std::strcmp(b, name) == 0) id.assign(nul + 1, b + data->d_size);
        break;
      }
    }
    elf_end(elf);
  }
  close(fd);
  return id;
}

// The build-id the debug file looked for must have: the alt file's for an
// alt file question (see AltFileBuildId), else the module's; empty if
// neither is known. *alt says which.
std::string WantedBuildId(Dwfl_Module* mod, const char* file_name, const char* debuglink_file,
                          GElf_Word debuglink_crc, bool* alt) {
  *alt = false;
  if (debuglink_crc == 0 && debuglink_file != nullptr && file_name != nullptr) {
    std::string id = AltFileBuildId(file_name, debuglink_file);
    if (!id.empty()) {
      *alt = true;
      return id;
    }
  }
  const unsigned char* id = nullptr;
  GElf_Addr id_vaddr;
  const int id_len = dwfl_module_build_id(mod, &id, &id_vaddr);
  return id_len > 0 ? std::string(reinterpret_cast<const char*>(id), static_cast<size_t>(id_len))
                    : std::string();
}

int LocalFindDebuginfo(Dwfl_Module* mod, void**, const char*, GElf_Addr, const char* file_name,
                       const char* debuglink_file, GElf_Word debuglink_crc,
                       char** debuginfo_file_name) {
  bool alt = false;
  const std::string want_id =
      WantedBuildId(mod, file_name, debuglink_file, debuglink_crc, &alt);
  struct Candidate {
    std::string path;
    bool by_build_id;
  };
  std::vector<Candidate> candidates;
  if (want_id.size() > 1) {
    static const char kHex[] = "0123456789abcdef";
    const auto* id = reinterpret_cast<const unsigned char*>(want_id.data());
    std::string p = DebugRoot() + "/.build-id/";
    p += kHex[id[0] >> 4];
    p += kHex[id[0] & 15];
    p += '/';
    for (size_t i = 1; i < want_id.size(); ++i) {
      p += kHex[id[i] >> 4];
      p += kHex[id[i] & 15];
    }
    p += ".debug";
    candidates.push_back({p, true});
  }
  if (debuglink_file != nullptr && file_name != nullptr) {
    std::string dir = file_name;
    const size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? std::string(".") : dir.substr(0, slash);
    if (alt) {
      // dwz names the alt file by an absolute path, or one relative to
      // the debug file's directory; under /usr/lib/debug when installed.
      const std::string name = debuglink_file;
      if (name[0] == '/') {
        candidates.push_back({name, false});
        static const std::string kDefaultRoot = "/usr/lib/debug/";
        if (name.compare(0, kDefaultRoot.size(), kDefaultRoot) == 0)
          candidates.push_back({DebugRoot() + name.substr(kDefaultRoot.size() - 1), false});
      } else {
        candidates.push_back({dir + "/" + name, false});
      }
    } else {
      candidates.push_back({dir + "/" + debuglink_file, false});
      candidates.push_back({dir + "/.debug/" + debuglink_file, false});
      candidates.push_back({DebugRoot() + dir + "/" + debuglink_file, false});
    }
  }
  for (const Candidate& c : candidates) {
    if (file_name != nullptr && c.path == file_name) continue;  // the module itself
    const int fd = open(c.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    bool ok;
    if (!want_id.empty()) ok = BuildIdOf(fd) == want_id;
    else ok = !c.by_build_id && FileCrcMatches(fd, debuglink_crc);
    if (ok) {
      *debuginfo_file_name = strdup(c.path.c_str());
      return fd;
    }
    close(fd);
  }
  return -1;
}

const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = LocalFindElf,
    .find_debuginfo = LocalFindDebuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

// The local places, then debuginfod by build-id (the module's, or its alt
// file's: debuginfod serves dwz files by theirs). The module's userdata is
// its encode's DebuginfodLookup (Module::Open sets it).
int OnlineFindDebuginfo(Dwfl_Module* mod, void** userdata, const char* modname, GElf_Addr base,
                        const char* file_name, const char* debuglink_file,
                        GElf_Word debuglink_crc, char** debuginfo_file_name) {
  const int fd = LocalFindDebuginfo(mod, userdata, modname, base, file_name, debuglink_file,
                                    debuglink_crc, debuginfo_file_name);
  if (fd >= 0 || userdata == nullptr || *userdata == nullptr) return fd;
  bool alt = false;
  const std::string id = WantedBuildId(mod, file_name, debuglink_file, debuglink_crc, &alt);
  if (id.empty()) return -1;
  std::string path;
  const int dfd = static_cast<DebuginfodLookup*>(*userdata)->FindDebuginfo(
      reinterpret_cast<const unsigned char*>(id.data()), id.size(), &path);
  if (dfd >= 0) *debuginfo_file_name = strdup(path.c_str());
  return dfd;
}

const Dwfl_Callbacks kOnlineCallbacks = {
    .find_elf = LocalFindElf,
    .find_debuginfo = OnlineFindDebuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

// Whether the ELF file has DWARF of its own (not only a link to a separate
// debug file).
bool HasDebugInfo(Elf* elf) {
  size_t shstrndx = 0;
  if (elf == nullptr || elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name != nullptr &&
        (std::strcmp(name, ".debug_info") == 0 || std::strcmp(name, ".zdebug_info") == 0)) {
      return true;
    }
  }
  return false;
}

std::string Resolved(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

// Whether `elf` is the tracer's own preloaded library (its DT_SONAME, so
// wherever it is installed or built).
bool IsTracerLibrary(Elf* elf) {
  if (elf == nullptr) return false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_DYNAMIC) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || shdr.sh_entsize == 0) return false;
    for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; ++i) {
      GElf_Dyn dyn;
      if (gelf_getdyn(data, static_cast<int>(i), &dyn) == nullptr || dyn.d_tag == DT_NULL) break;
      if (dyn.d_tag != DT_SONAME) continue;
      const char* name = elf_strptr(elf, shdr.sh_link, dyn.d_un.d_val);
      return name != nullptr && std::strcmp(name, "libgotrace.so") == 0;
    }
    return false;
  }
  return false;
}

// The policy of DwOptions::system_dwarf, for the module at `path` whose
// main ELF file is `elf`. The tracer's own library is named from its symbol
// table whatever the options say: its frames (a CPU sample taken inside an
// interposer) need no file or line, and its DWARF (a megabyte, in a
// build directory, outside the system paths) cost the launcher's end of a
// build 6 ms for three addresses.
bool ReadsDwarf(const std::string& path, Elf* elf, const DwOptions& options) {
  if (IsTracerLibrary(elf)) return false;
  if (options.system_dwarf || !IsSystemLibraryPath(Resolved(path))) return true;
  return HasDebugInfo(elf);
}

std::string Demangle(const char* name) {
  if (name == nullptr) return std::string();
  // A versioned definition in a full symbol table (libc6-dbg's
  // pthread_mutex_lock@@GLIBC_2.2.5): the name the program called.
  if (const char* at = std::strchr(name, '@'); at != nullptr && at != name)
    return Demangle(std::string(name, static_cast<size_t>(at - name)).c_str());
  if (name[0] == '_' && name[1] == 'Z') {
    int status = -1;
    char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (d != nullptr) {
      std::string s = status == 0 ? std::string(d) : std::string(name);
      std::free(d);
      if (status == 0) {
        if (std::optional<std::string> rust = RustLegacyName(name, s)) return *std::move(rust);
      }
      return s;
    }
  }
  return name;
}

// `file` as DWARF gives it, made absolute with the compilation directory.
std::string JoinDir(const std::string& dir, const char* file) {
  if (file == nullptr) return std::string();
  if (file[0] == '/' || dir.empty()) return file;
  std::string s = dir;
  if (s.back() != '/') s += '/';
  s += file;
  return s;
}

std::string CompDir(Dwarf_Die* cu) {
  Dwarf_Attribute attr;
  const char* dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
  return dir != nullptr ? std::string(dir) : std::string();
}

// The enclosing namespaces and classes ("ns::(anonymous namespace)::") of
// functions that have no linkage name to demangle, by DIE.
using Prefixes = std::unordered_map<const void*, std::string>;

const char* LinkageName(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  const char* name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
  if (name == nullptr) {
    name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
  }
  return name;
}

// The name of a subprogram or inlined subroutine: the demangled linkage name
// if there is one (it is qualified), else DW_AT_name (following
// DW_AT_abstract_origin and DW_AT_specification) qualified by its scopes.
std::string DieName(Dwarf_Die* die, const Prefixes& prefixes) {
  if (const char* linkage = LinkageName(die); linkage != nullptr) return Demangle(linkage);
  Dwarf_Die named = *die;
  for (int i = 0; i < 8 && !dwarf_hasattr(&named, DW_AT_name); ++i) {
    Dwarf_Attribute attr;
    Dwarf_Die next;
    if (dwarf_formref_die(dwarf_attr(&named, DW_AT_abstract_origin, &attr), &next) == nullptr &&
        dwarf_formref_die(dwarf_attr(&named, DW_AT_specification, &attr), &next) == nullptr) {
      return std::string();
    }
    named = next;
  }
  const char* name = dwarf_diename(&named);
  if (name == nullptr) return std::string();
  auto it = prefixes.find(named.addr);
  return it == prefixes.end() ? std::string(name) : it->second + name;
}

// The call site of an inlined subroutine: DW_AT_call_file/DW_AT_call_line.
void CallSite(Dwarf_Die* inlined, std::string* file, uint32_t* line) {
  file->clear();
  *line = 0;
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &value) == 0) {
    *line = static_cast<uint32_t>(value);
  }
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &value) != 0) return;
  Dwarf_Die cu;
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (dwarf_diecu(inlined, &cu, nullptr, nullptr) == nullptr ||
      dwarf_getsrcfiles(&cu, &files, &nfiles) != 0 || value >= nfiles) {
    return;
  }
  *file = JoinDir(CompDir(&cu), dwarf_filesrc(files, value, nullptr, nullptr));
}

// The file name of a path; "?" if it has none.
std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash + 1 == path.size()) return std::string(1, '?');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsBlock(int tag) {
  return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
         tag == DW_TAG_try_block || tag == DW_TAG_catch_block || tag == DW_TAG_with_stmt;
}

// Appends to *path the chain of blocks and inlined subroutines under `die`
// that contain pc, outermost first. A lexical block without addresses is
// looked through.
bool Descend(Dwarf_Die* die, Dwarf_Addr pc, std::vector<Dwarf_Die>* path, int depth) {
  Dwarf_Die child;
  if (depth > kMaxDepth || dwarf_child(die, &child) != 0) return false;
  do {
    const int tag = dwarf_tag(&child);
    if (!IsBlock(tag)) continue;
    if (dwarf_haspc(&child, pc) > 0) {
      path->push_back(child);
      Descend(&child, pc, path, depth + 1);
      return true;
    }
    if (tag == DW_TAG_lexical_block && !dwarf_hasattr(&child, DW_AT_low_pc) &&
        !dwarf_hasattr(&child, DW_AT_ranges) && Descend(&child, pc, path, depth + 1)) {
      return true;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

// The code ranges of one compile unit's functions, sorted by start.
class CuIndex {
 public:
  CuIndex(Dwarf_Die* cu, Prefixes* prefixes) : comp_dir_(CompDir(cu)) {
    Collect(cu, 0, std::string(), prefixes);
    std::sort(ranges_.begin(), ranges_.end(),
              [](const Range& a, const Range& b) { return a.lo < b.lo; });
    max_hi_.resize(ranges_.size());
    Dwarf_Addr hi = 0;
    for (size_t i = 0; i < ranges_.size(); ++i) max_hi_[i] = hi = std::max(hi, ranges_[i].hi);
  }

  // The innermost indexed function whose ranges contain pc.
  const Dwarf_Die* Find(Dwarf_Addr pc) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), pc,
                               [](Dwarf_Addr a, const Range& r) { return a < r.lo; });
    for (size_t i = static_cast<size_t>(it - ranges_.begin()); i-- > 0 && max_hi_[i] > pc;) {
      if (pc < ranges_[i].hi) return &ranges_[i].die;
    }
    return nullptr;
  }

  const std::string& comp_dir() const { return comp_dir_; }

 private:
  struct Range {
    Dwarf_Addr lo, hi;
    Dwarf_Die die;
  };

  // Indexes the functions under parent, whose scope is named `prefix`.
  void Collect(Dwarf_Die* parent, int depth, const std::string& prefix, Prefixes* prefixes) {
    Dwarf_Die child;
    if (depth > kMaxDepth || dwarf_child(parent, &child) != 0) return;
    do {
      const int tag = dwarf_tag(&child);
      switch (tag) {
        case DW_TAG_subprogram: {
          Dwarf_Addr base, lo, hi;
          ptrdiff_t off = 0;
          while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
            if (lo < hi) ranges_.push_back(Range{lo, hi, child});
          }
          if (!prefix.empty() && LinkageName(&child) == nullptr) {
            prefixes->try_emplace(child.addr, prefix);
          }
          Collect(&child, depth + 1, prefix, prefixes);  // nested functions, local classes
          break;
        }
        case DW_TAG_namespace:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_interface_type:
        case DW_TAG_module: {
          const char* name = dwarf_diename(&child);
          std::string scope = prefix;
          scope += name != nullptr           ? name
                   : tag == DW_TAG_namespace ? "(anonymous namespace)"
                                             : "(anonymous)";
          scope += "::";
          Collect(&child, depth + 1, scope, prefixes);
          break;
        }
        case DW_TAG_imported_unit: {
          Dwarf_Attribute attr;
          Dwarf_Die unit;
          if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &unit) != nullptr) {
            Collect(&unit, depth + 1, prefix, prefixes);
          }
          break;
        }
        default:
          break;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  std::string comp_dir_;
  std::vector<Range> ranges_;
  std::vector<Dwarf_Addr> max_hi_;
};

// A module's ELF symbol table as stored: .symtab; else the separate debug
// file's (found the way libdwfl would, without reading its DWARF: its
// .symtab is not compressed); else .dynsym. Only for linked
// objects (ET_EXEC, ET_DYN), whose symbol values are addresses. Read with
// gelf_getsym (a copy of 24 bytes) rather than dwfl_module_getsym_info
// (section lookups for every symbol), and names are read only for symbols
// found: touching the string table of a large binary for every symbol (its
// pages faulted in one by one) was most of the cost.
struct RawSymtab {
  RawSymtab() = default;
  RawSymtab(const RawSymtab&) = delete;
  RawSymtab& operator=(const RawSymtab&) = delete;
  ~RawSymtab() {
    if (debug_elf != nullptr) elf_end(debug_elf);
    if (debug_fd >= 0) close(debug_fd);
  }

  Elf_Data* data = nullptr;
  Elf* strtab_elf = nullptr;
  size_t strtab_ndx = 0;
  size_t count = 0;
  GElf_Addr bias = 0;
  // The allocated sections of the module's ELF: an unsized symbol (an
  // assembly label) extends at most to the end of its section.
  std::vector<std::pair<GElf_Addr, GElf_Addr>> sections;

  static Elf_Scn* FindTable(Elf* elf, GElf_Word type, GElf_Shdr* shdr) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
      if (gelf_getshdr(scn, shdr) != nullptr && shdr->sh_type == type && shdr->sh_entsize != 0)
        return scn;
    }
    return nullptr;
  }

  static bool HasSection(Elf* elf, const char* name) {
    size_t shstrndx = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr) continue;
      const char* n = elf_strptr(elf, shstrndx, sh.sh_name);
      if (n != nullptr && std::strcmp(n, name) == 0) return true;
    }
    return false;
  }

  // The separate debug file, when we opened it ourselves.
  int debug_fd = -1;
  Elf* debug_elf = nullptr;

  bool Open(Dwfl_Module* mod, bool dwarf_loaded, const Dwfl_Callbacks* callbacks) {
    GElf_Addr elf_bias = 0;
    Elf* elf = dwfl_module_getelf(mod, &elf_bias);
    GElf_Ehdr ehdr;
    if (elf == nullptr || gelf_getehdr(elf, &ehdr) == nullptr ||
        (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN)) {
      return false;
    }
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr || !(sh.sh_flags & SHF_ALLOC)) continue;
      sections.emplace_back(sh.sh_addr + elf_bias, sh.sh_addr + elf_bias + sh.sh_size);
    }
    GElf_Shdr shdr;
    Elf* src = elf;
    bias = elf_bias;
    Elf_Scn* scn = FindTable(elf, SHT_SYMTAB, &shdr);
    if (scn == nullptr && dwarf_loaded) {
      GElf_Addr dbias = 0;
      if (Dwarf* dw = dwfl_module_getdwarf(mod, &dbias); dw != nullptr) {
        if (Elf* debug = dwarf_getelf(dw); debug != nullptr && debug != elf) {
          if ((scn = FindTable(debug, SHT_SYMTAB, &shdr)) != nullptr) {
            src = debug;
            bias = dbias;
          }
        }
      }
    } else if (scn == nullptr && callbacks != nullptr && callbacks->find_debuginfo != nullptr) {
      void** userdata = nullptr;
      Dwarf_Addr start = 0;
      const char* main_file = nullptr;
      const char* name =
          dwfl_module_info(mod, &userdata, &start, nullptr, nullptr, nullptr, &main_file, nullptr);
      GElf_Word crc = 0;
      const char* link = dwelf_elf_gnu_debuglink(elf, &crc);
      char* debug_name = nullptr;
      debug_fd = callbacks->find_debuginfo(mod, userdata, name, start, main_file, link, crc,
                                           &debug_name);
      free(debug_name);
      if (debug_fd >= 0) debug_elf = elf_begin(debug_fd, ELF_C_READ_MMAP, nullptr);
      if (debug_elf != nullptr && (scn = FindTable(debug_elf, SHT_SYMTAB, &shdr)) != nullptr) {
        src = debug_elf;  // same link-time addresses as the module: the same bias
      }
    }
    // MiniDebugInfo (.gnu_debugdata: an xz-compressed ELF with the symbols
    // .dynsym lacks, as Fedora ships): libdwfl's table merges the two, so
    // such a module is read through it (SymbolIndex) rather than here.
    if (scn == nullptr && HasSection(elf, ".gnu_debugdata")) return false;
    if (scn == nullptr) scn = FindTable(elf, SHT_DYNSYM, &shdr);
    if (scn == nullptr || (data = elf_getdata(scn, nullptr)) == nullptr) return false;
    strtab_elf = src;
    strtab_ndx = shdr.sh_link;
    count = shdr.sh_size / shdr.sh_entsize;
    return true;
  }

  // Calls f(sym, address, name offset) for every symbol that may name code,
  // in table order (the order that breaks ties).
  // A 64-bit table in memory representation (libelf has already converted
  // it to the host's byte order) is read in place: gelf_getsym per symbol
  // was most of the cost of naming a few PCs in a 30,000-symbol executable.
  template <typename F>
  void ForEachCode(F f) const {
    if (data->d_type == ELF_T_SYM && strtab_elf != nullptr &&
        gelf_getclass(strtab_elf) == ELFCLASS64 && data->d_size >= count * sizeof(Elf64_Sym)) {
      const auto* syms = static_cast<const Elf64_Sym*>(data->d_buf);
      for (size_t i = 1; i < count; ++i) {
        const Elf64_Sym& sym = syms[i];
        if (!IsCode(sym.st_info, sym.st_shndx) || sym.st_name == 0) continue;
        f(sym, sym.st_value + bias, sym.st_name);
      }
      return;
    }
    for (size_t i = 1; i < count; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
      if (!IsCode(sym.st_info, sym.st_shndx) || sym.st_name == 0) continue;
      f(sym, sym.st_value + bias, sym.st_name);
    }
  }

  const char* Name(uint32_t off) const { return elf_strptr(strtab_elf, strtab_ndx, off); }

  // The end of the last allocated section holding addr, or addr itself.
  GElf_Addr SectionEnd(GElf_Addr addr) const {
    GElf_Addr end = addr;
    for (const auto& [lo, hi] : sections) {
      if (lo <= addr && addr < hi) end = hi;
    }
    return end;
  }

  static bool IsCode(unsigned char info, GElf_Word shndx) {
    if (shndx == SHN_UNDEF || shndx == SHN_ABS) return false;
    const int type = GELF_ST_TYPE(info);
    return type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE;
  }
};

// Which of several symbols covering an address names it: the one with the
// highest start; among equal starts a sized one over an unsized one, then
// global over weak over local, then the name with fewer leading
// underscores, and not one of glibc's internal aliases (a full symbol
// table, libc6-dbg's, has clone3, __clone3 and __GI___clone3 at one
// address, all local: the last was shown), then the later in the table.
inline int Rank(const GElf_Sym& sym, const char* name) {
  const int bind = GELF_ST_BIND(sym.st_info);
  int penalty = 0;
  if (name != nullptr) {
    while (name[penalty] == '_' && penalty < 8) ++penalty;
    if (std::strncmp(name, "__GI_", 5) == 0) penalty += 4;
  }
  return (bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0) * 16 + (15 - std::min(penalty, 15));
}
inline uint64_t TieKey(bool sized, int rank, uint32_t order) {
  return uint64_t{sized} << 40 | uint64_t(rank) << 32 | order;
}

// The name of the symbol of `table` that covers addr, by one pass over the
// table: the same answer as SymbolIndex::Find, without sorting anything,
// for modules where only a few addresses need a name (a short process's
// executable). An unsized symbol covers addr when no symbol starts after it
// and at or before addr, and addr is in its section.
const char* LinearFind(const RawSymtab& table, GElf_Addr addr) {
  struct Cand {
    GElf_Addr lo;
    uint64_t key;
    uint32_t name_off;
  };
  std::vector<Cand> sized, unsized_at_top;
  GElf_Addr top = 0;  // the highest start <= addr seen
  bool any = false;
  uint32_t order = 0;
  table.ForEachCode([&](const GElf_Sym& sym, GElf_Addr lo, uint32_t name_off) {
    const uint32_t o = order++;
    if (lo > addr) return;
    if (!any || lo > top) {
      top = lo;
      any = true;
      unsized_at_top.clear();
    }
    if (sym.st_size != 0) {
      if (addr < lo + sym.st_size)
        sized.push_back(Cand{lo, TieKey(true, Rank(sym, table.Name(name_off)), o), name_off});
    } else if (lo == top) {
      unsized_at_top.push_back(
          Cand{lo, TieKey(false, Rank(sym, table.Name(name_off)), o), name_off});
    }
  });
  if (any && addr < table.SectionEnd(top))
    sized.insert(sized.end(), unsized_at_top.begin(), unsized_at_top.end());
  std::sort(sized.begin(), sized.end(), [](const Cand& a, const Cand& b) {
    return a.lo != b.lo ? a.lo > b.lo : a.key > b.key;
  });
  for (const Cand& c : sized) {
    const char* name = table.Name(c.name_off);
    if (name != nullptr && name[0] != '\0' && name[0] != '$') return name;  // $x, $d: AArch64 mapping symbols
  }
  return nullptr;
}

// Sorts `v` by its elements' `lo`: least significant digit first, 11 bits
// a pass, as many passes as the starts have bits that differ.
template <typename T>
void RadixSortByStart(std::vector<T>* v) {
  if (v->size() < 2) return;
  uint64_t differ = 0;
  for (const T& x : *v) differ |= x.lo ^ v->front().lo;
  std::vector<T> out(v->size());
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t{1} << kBits;
  for (int shift = 0; shift < 64 && (differ >> shift) != 0; shift += kBits) {
    std::vector<size_t> at(kBuckets + 1, 0);
    for (const T& x : *v) ++at[((x.lo >> shift) & (kBuckets - 1)) + 1];
    for (size_t b = 1; b <= kBuckets; ++b) at[b] += at[b - 1];
    for (const T& x : *v) out[at[(x.lo >> shift) & (kBuckets - 1)]++] = x;
    v->swap(out);
  }
}

// A module's code symbols sorted by address, for modules with many
// addresses to name. dwfl_module_addrinfo scans the whole table on every
// call, which is too slow for large libraries without debug info.
class SymbolIndex {
 public:
  // From `raw` if it could be read, else through libdwfl (which also reads
  // a table kept only in .gnu_debugdata).
  SymbolIndex(Dwfl_Module* mod, const RawSymtab* raw) : raw_(raw) {
    // (node's .symtab: 109,000 symbols; growing the vector was a tenth of
    // the index's cost.)
    syms_.reserve(raw != nullptr ? raw->count
                                 : static_cast<size_t>(std::max(0, dwfl_module_getsymtab(mod))));
    if (raw != nullptr) {
      raw->ForEachCode([&](const GElf_Sym& sym, GElf_Addr lo, uint32_t name_off) {
        Add(sym, lo, nullptr, name_off);
      });
    } else {
      const int n = dwfl_module_getsymtab(mod);
      for (int i = 1; i < n; ++i) {
        GElf_Sym sym;
        GElf_Addr value = 0;
        GElf_Word shndx = 0;
        const char* name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, nullptr, nullptr);
        if (name != nullptr && name[0] != '\0' && RawSymtab::IsCode(sym.st_info, shndx))
          Add(sym, value, name, 0);
      }
    }
    // Preferred last among equal starts (Find walks backwards). Sorted as
    // 16-byte keys, then the symbols put in that order. A symbol's rank
    // needs its name (Rank), which only matters among symbols that start
    // at the same address: sorted first without it, then each such run
    // again with it (reading every name cost node's index a sixth).
    struct Key {
      GElf_Addr lo;
      uint64_t rest;  // TieKey: its low 32 bits are the position in syms_
    };
    auto by_key = [](const Key& a, const Key& b) {
      return a.lo != b.lo ? a.lo < b.lo : a.rest < b.rest;
    };
    // By start with a radix sort, which compares nothing: std::sort took
    // 1.45 ms of cc1's 29,000 symbols (a table in hash order: every other
    // compare mispredicted). The order within a run of equal starts is
    // by_key's, made below.
    std::vector<Key> keys(syms_.size());
    for (size_t i = 0; i < syms_.size(); ++i) {
      const Sym& s = syms_[i];
      keys[i] = Key{s.lo, TieKey(s.sized, 0, static_cast<uint32_t>(i))};
    }
    RadixSortByStart(&keys);
    for (size_t i = 0, j; i < keys.size(); i = j) {
      for (j = i + 1; j < keys.size() && keys[j].lo == keys[i].lo;) ++j;
      if (j - i < 2) continue;
      for (size_t k = i; k < j; ++k) {
        const Sym& s = syms_[static_cast<uint32_t>(keys[k].rest)];
        keys[k].rest = TieKey(s.sized, RankOf(s), static_cast<uint32_t>(keys[k].rest));
      }
      std::sort(keys.begin() + static_cast<ptrdiff_t>(i), keys.begin() + static_cast<ptrdiff_t>(j),
                by_key);
    }
    std::vector<Sym> sorted(syms_.size());
    for (size_t i = 0; i < keys.size(); ++i) sorted[i] = syms_[static_cast<uint32_t>(keys[i].rest)];
    syms_ = std::move(sorted);
    SizeUnsized(mod);
    // Each symbol's nearest predecessor that ends after it (a stack of
    // ends, once over the table).
    ends_after_.resize(syms_.size());
    std::vector<uint32_t> open;
    for (size_t i = 0; i < syms_.size(); ++i) {
      while (!open.empty() && syms_[open.back()].hi <= syms_[i].hi) open.pop_back();
      ends_after_[i] = open.empty() ? kNone : open.back();
      open.push_back(static_cast<uint32_t>(i));
    }
  }

  // The name of the innermost symbol containing addr; nullptr if none.
  // Problem: walking back from the last symbol that starts at or below
  // addr until one covers it took as long as the table when an early
  // symbol covers much of the code (node: 228 addresses, 109,000 symbols,
  // a quarter of an encode's time). A symbol that ends at or below addr
  // says that every symbol between it and its ends_after_ does too.
  const char* Find(GElf_Addr addr) const {
    auto it = std::upper_bound(syms_.begin(), syms_.end(), addr,
                               [](GElf_Addr a, const Sym& s) { return a < s.lo; });
    size_t i = static_cast<size_t>(it - syms_.begin());
    if (i == 0) return nullptr;
    --i;
    for (;;) {
      if (addr < syms_[i].hi) {
        const char* name = syms_[i].name != nullptr ? syms_[i].name : raw_->Name(syms_[i].name_off);
        if (name != nullptr && name[0] != '\0' && name[0] != '$') return name;
        if (i == 0) return nullptr;
        --i;  // nameless: the next one back may cover addr too
      } else {
        if (ends_after_[i] == kNone) return nullptr;
        i = ends_after_[i];
      }
    }
  }

 private:
  struct Sym {
    GElf_Addr lo, hi;
    const char* name;   // through libdwfl; else null and
    uint32_t name_off;  // the offset in the raw table's strings
    bool sized;
    unsigned char info;  // st_info: the binding, for RankOf
  };

  void Add(const GElf_Sym& sym, GElf_Addr value, const char* name, uint32_t name_off) {
    syms_.push_back(Sym{value, value + sym.st_size, name, name_off, sym.st_size != 0, sym.st_info});
  }

  int RankOf(const Sym& s) const {
    GElf_Sym sym{};
    sym.st_info = s.info;
    return Rank(sym, s.name != nullptr ? s.name : raw_->Name(s.name_off));
  }

  // A symbol without a size (assembly labels) extends to the next symbol, at
  // most to the end of its section.
  void SizeUnsized(Dwfl_Module* mod) {
    RawSymtab sections_only;
    if (raw_ == nullptr) {
      GElf_Addr bias = 0;
      if (Elf* elf = dwfl_module_getelf(mod, &bias); elf != nullptr) {
        for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr;
             scn = elf_nextscn(elf, scn)) {
          GElf_Shdr shdr;
          if (gelf_getshdr(scn, &shdr) == nullptr || !(shdr.sh_flags & SHF_ALLOC)) continue;
          sections_only.sections.emplace_back(shdr.sh_addr + bias,
                                               shdr.sh_addr + bias + shdr.sh_size);
        }
      }
    }
    const RawSymtab& sec = raw_ != nullptr ? *raw_ : sections_only;
    for (size_t i = 0; i < syms_.size(); ++i) {
      Sym& s = syms_[i];
      if (s.sized) continue;
      s.hi = sec.SectionEnd(s.lo);
      for (size_t j = i + 1; j < syms_.size(); ++j) {
        if (syms_[j].lo > s.lo) {
          s.hi = std::min(s.hi, syms_[j].lo);
          break;
        }
      }
    }
  }

  static constexpr uint32_t kNone = ~uint32_t{0};
  const RawSymtab* raw_;
  std::vector<Sym> syms_;
  std::vector<uint32_t> ends_after_;  // the nearest earlier symbol with a higher end, or kNone
};

// One ELF file at one load bias, with its own Dwfl.
class Module {
 public:
  Module(std::string path, uint64_t bias, const DwOptions& options)
      : path_(std::move(path)),
        base_(Basename(path_)),
        bias_(bias),
        options_(options),
        callbacks_(options.debuginfod != nullptr && !options.offline ? &kOnlineCallbacks
                                                                      : &kOfflineCallbacks) {}
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module() {
    if (dwfl_ != nullptr) dwfl_end(dwfl_);
  }

  // Symbolizer::Expect: only whether more distinct addresses than the
  // linear lookups will be asked is kept.
  void Expect(uint64_t addr) {
    if (expected_.size() <= static_cast<size_t>(options_.linear_symbol_lookups))
      expected_.insert(addr);
  }

  void Symbolize(uint64_t addr, std::vector<SymFrame>* out) {
    auto [it, inserted] = cache_.try_emplace(addr);
    if (inserted) Resolve(addr, &it->second);
    out->insert(out->end(), it->second.begin(), it->second.end());
  }

  // What the first addresses would cost, paid now: the file opened, its
  // DWARF read in (where the policy reads it), its symbol table indexed.
  void Warm() {
    if (!Open()) return;
    if (dwarf_) {
      Dwarf_Addr dwbias = 0;
      (void)dwfl_module_getdwarf(mod_, &dwbias);
    }
    if (symbols_ == nullptr) {
      if (!raw_tried_) {
        raw_tried_ = true;
        raw_ok_ = raw_.Open(mod_, dwarf_, callbacks_);
      }
      symbols_ = std::make_unique<SymbolIndex>(mod_, raw_ok_ ? &raw_ : nullptr);
    }
  }

 private:
  bool Open() {
    if (opened_) return mod_ != nullptr;
    opened_ = true;
    struct stat st;
    if (path_.empty() || stat(path_.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    dwfl_ = dwfl_begin(callbacks_);
    if (dwfl_ == nullptr) return false;
    dwfl_report_begin(dwfl_);
    mod_ = dwfl_report_elf(dwfl_, base_.c_str(), path_.c_str(), -1, bias_, true);
    dwfl_report_end(dwfl_, nullptr, nullptr);
    if (mod_ == nullptr) return false;
    if (callbacks_ == &kOnlineCallbacks) {
      void** userdata = nullptr;
      dwfl_module_info(mod_, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
      if (userdata != nullptr) *userdata = options_.debuginfod.get();
    }
    GElf_Addr elf_bias = 0;
    dwarf_ = ReadsDwarf(path_, dwfl_module_getelf(mod_, &elf_bias), options_);
    return true;
  }

  // libdwfl takes a CU's code to run up to the next CU's start, and libdw's
  // line table answers with its last row at or below pc: code between two
  // CUs (crt1's _start, after main's CU, which has no debug info) got the
  // line where main's CU ends (addr2line: ??:?). A CU whose address ranges
  // leave pc out is not pc's; one with no address attributes cannot tell.
  static bool CuCovers(Dwarf_Die* cu, Dwarf_Addr pc) {
    const int in = dwarf_haspc(cu, pc);
    if (in != 0) return true;  // in, or cannot tell (an error)
    return !dwarf_hasattr(cu, DW_AT_ranges) && !dwarf_hasattr(cu, DW_AT_low_pc);
  }

  void Resolve(uint64_t addr, std::vector<SymFrame>* frames) {
    if (!Open()) {
      frames->push_back(OffsetFrame(addr));
      return;
    }
    std::string file;
    uint32_t line = 0;
    Dwarf_Addr dwbias = 0;
    // Without DWARF (the policy), straight to the symbol table below.
    Dwarf_Die* cudie = dwarf_ ? dwfl_module_addrdie(mod_, addr, &dwbias) : nullptr;
    if (cudie != nullptr && !CuCovers(cudie, addr - dwbias)) cudie = nullptr;
    if (cudie != nullptr) {
      const Dwarf_Addr pc = addr - dwbias;
      const CuIndex& index = Index(cudie);
      if (Dwarf_Line* l = dwarf_getsrc_die(cudie, pc); l != nullptr) {
        int lineno = 0;
        if (dwarf_lineno(l, &lineno) == 0 && lineno > 0) line = static_cast<uint32_t>(lineno);
        file = JoinDir(index.comp_dir(), dwarf_linesrc(l, nullptr, nullptr));
      }
      if (const Dwarf_Die* fn = index.Find(pc); fn != nullptr) {
        std::vector<Dwarf_Die> path{*fn};
        Descend(&path[0], pc, &path, 0);
        for (size_t i = path.size(); i-- > 0;) {
          const int tag = dwarf_tag(&path[i]);
          if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) continue;
          frames->push_back(SymFrame{DieName(&path[i], prefixes_), file, line});
          if (tag == DW_TAG_inlined_subroutine) CallSite(&path[i], &file, &line);
        }
        if (frames->back().func.empty()) frames->back().func = SymbolName(addr);
        if (frames->back().func.empty()) frames->back() = SymFrame{OffsetFrame(addr).func,
                                                                   frames->back().file,
                                                                   frames->back().line, false};
        return;
      }
    }
    // No function in the debug info: the ELF symbol table, with the line
    // table's answer if there was one.
    std::string name = SymbolName(addr);
    if (name.empty()) {
      frames->push_back(OffsetFrame(addr));
      return;
    }
    frames->push_back(SymFrame{std::move(name), std::move(file), line});
  }

  // The first few names come from one pass over the table each (a short
  // process names a handful of PCs per module); after that the table is
  // sorted once (SymbolIndex).
  std::string SymbolName(uint64_t addr) {
    if (symbols_ == nullptr) {
      if (!raw_tried_) {
        raw_tried_ = true;
        raw_ok_ = raw_.Open(mod_, dwarf_, callbacks_);
      }
      // Not when more addresses than that are to be named in this module
      // (Expect): the scans would be thrown away. (Some of them may be
      // named by DWARF instead: node has DWARF for a few of its objects
      // and names most addresses from its table; then the table is
      // sorted for a few, at about the cost of the scans.)
      const bool many = expected_.size() > static_cast<size_t>(options_.linear_symbol_lookups);
      if (raw_ok_ && !many && linear_lookups_ < options_.linear_symbol_lookups) {
        ++linear_lookups_;
        return Demangle(LinearFind(raw_, addr));
      }
      symbols_ = std::make_unique<SymbolIndex>(mod_, raw_ok_ ? &raw_ : nullptr);
    }
    return Demangle(symbols_->Find(addr));
  }

  SymFrame OffsetFrame(uint64_t addr) const {
    char hex[32];
    std::snprintf(hex, sizeof hex, "+0x%" PRIx64, addr - bias_);
    return SymFrame{base_ + hex, std::string(), 0, false};
  }

  const CuIndex& Index(Dwarf_Die* cudie) {
    auto it = cus_.find(cudie->addr);
    if (it == cus_.end()) it = cus_.try_emplace(cudie->addr, cudie, &prefixes_).first;
    return it->second;
  }

  std::string path_;
  std::string base_;
  uint64_t bias_;
  DwOptions options_;
  const Dwfl_Callbacks* callbacks_;
  bool opened_ = false;
  bool dwarf_ = true;  // the policy's answer, once opened
  Dwfl* dwfl_ = nullptr;
  Dwfl_Module* mod_ = nullptr;
  std::unordered_map<uint64_t, std::vector<SymFrame>> cache_;
  std::unordered_map<const void*, CuIndex> cus_;
  Prefixes prefixes_;
  RawSymtab raw_;
  bool raw_tried_ = false;
  bool raw_ok_ = false;
  int linear_lookups_ = 0;
  std::unordered_set<uint64_t> expected_;
  std::unique_ptr<SymbolIndex> symbols_;
};

// Modules shared by the symbolizers of many processes (a launcher encoding a
// whole run: the compiler of a build is opened and indexed once, not once
// per compile). Each file is opened at load bias 0 and asked for the
// file's own addresses (a process's address minus its load bias). Keyed by
// the file's identity (device, inode, size, modification time), so a file
// replaced between two processes is opened anew. libdw is not thread-safe:
// every use goes through the pool's lock; the encoders around it (the
// scheduling model, the writing) run in parallel.
class ModulePool {
 public:
  explicit ModulePool(const DwOptions& options) : options_(options) {}

  // One module per file: two names of it (a log's /lib/x86_64-linux-gnu/libc.so.6,
  // /proc/PID/maps' /usr/lib/x86_64-linux-gnu/libc.so.6) share it when their
  // last components agree (an address no symbol covers is named after it).
  Module* Get(const std::string& path) {
    struct stat st {};
    std::string key = path, file;
    if (stat(path.c_str(), &st) == 0) {
      char id[96];
      std::snprintf(id, sizeof id, "|%ju:%ju:%jd:%jd.%ld", static_cast<uintmax_t>(st.st_dev),
                    static_cast<uintmax_t>(st.st_ino), static_cast<intmax_t>(st.st_size),
                    static_cast<intmax_t>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec);
      key += id;
      file = Basename(path) + id;
    }
    auto [it, inserted] = by_name_.try_emplace(key, nullptr);
    if (!inserted) return it->second;
    if (!file.empty()) {
      auto [same, made] = by_file_.try_emplace(file, nullptr);
      if (!made) return it->second = same->second;
      it->second = same->second = Own(path);
    } else {
      it->second = Own(path);
    }
    return it->second;
  }
  std::mutex& mu() { return mu_; }

 private:
  Module* Own(const std::string& path) {
    owned_.push_back(std::make_unique<Module>(path, 0, options_));
    return owned_.back().get();
  }

  DwOptions options_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Module>> owned_;
  std::map<std::string, Module*> by_name_;  // path and identity
  std::map<std::string, Module*> by_file_;  // last component and identity
};

class DwSymbolizer final : public Symbolizer {
 public:
  explicit DwSymbolizer(const DwOptions& options, std::shared_ptr<ModulePool> pool = nullptr)
      : pool_(std::move(pool)), options_(options) {}

  void ModuleLoaded(const log::ModuleLoadFields& f) override {
    if (f.lo >= f.hi) return;
    Module* module;
    uint64_t rebase = 0;
    if (pool_) {
      std::lock_guard<std::mutex> lock(pool_->mu());
      module = pool_->Get(f.path);
      rebase = f.bias;
    } else {
      auto [it, inserted] = modules_.try_emplace(std::make_pair(f.path, f.bias));
      if (inserted) it->second = std::make_unique<Module>(f.path, f.bias, options_);
      module = it->second.get();
    }
    maps_.push_back(Mapping{f.epoch, kNever, f.lo, f.hi, module, rebase});
    sorted_ = false;
  }

  void ModuleUnloaded(const log::ModuleUnloadFields& f) override {
    for (Mapping& m : maps_) {
      if (m.unload_epoch == kNever && m.lo < f.hi && f.lo < m.hi) m.unload_epoch = f.epoch;
    }
  }

  void Expect(uint64_t addr, uint32_t epoch) override {
    OnModule(addr, epoch, [](Module* m, uint64_t a) { m->Expect(a); });
  }

  void Symbolize(uint64_t addr, uint32_t epoch, std::vector<SymFrame>* out) override {
    OnModule(addr, epoch, [out](Module* m, uint64_t a) { m->Symbolize(a, out); });
  }

 private:
  struct Mapping {
    uint32_t load_epoch;
    uint64_t unload_epoch;  // kNever while mapped
    uint64_t lo, hi;
    Module* module;
    uint64_t rebase;  // subtracted from an address before the module sees it
  };

  // f(module, the address as the module knows it) for the module mapped at
  // addr in `epoch`, under the pool's lock if the modules are shared.
  template <typename F>
  void OnModule(uint64_t addr, uint32_t epoch, F f) {
    const Mapping* m = Find(addr, epoch);
    if (m == nullptr) return;
    if (pool_) {
      std::lock_guard<std::mutex> lock(pool_->mu());
      f(m->module, addr - m->rebase);
    } else {
      f(m->module, addr);
    }
  }

  // The mapping at addr in `epoch`; of several, the latest load (by epoch,
  // then by log order).
  const Mapping* Find(uint64_t addr, uint32_t epoch) {
    if (!sorted_) Sort();
    auto it = std::upper_bound(order_.begin(), order_.end(), addr,
                               [this](uint64_t a, uint32_t i) { return a < maps_[i].lo; });
    const Mapping* best = nullptr;
    uint32_t best_index = 0;
    for (size_t k = static_cast<size_t>(it - order_.begin()); k-- > 0 && max_hi_[k] > addr;) {
      const uint32_t i = order_[k];
      const Mapping& m = maps_[i];
      if (addr >= m.hi || m.load_epoch > epoch || m.unload_epoch <= epoch) continue;
      if (best == nullptr || m.load_epoch > best->load_epoch ||
          (m.load_epoch == best->load_epoch && i > best_index)) {
        best = &m;
        best_index = i;
      }
    }
    return best;
  }

  void Sort() {
    order_.resize(maps_.size());
    for (size_t i = 0; i < maps_.size(); ++i) order_[i] = static_cast<uint32_t>(i);
    std::stable_sort(order_.begin(), order_.end(),
                     [this](uint32_t a, uint32_t b) { return maps_[a].lo < maps_[b].lo; });
    max_hi_.resize(order_.size());
    uint64_t hi = 0;
    for (size_t k = 0; k < order_.size(); ++k) max_hi_[k] = hi = std::max(hi, maps_[order_[k]].hi);
    sorted_ = true;
  }

  std::map<std::pair<std::string, uint64_t>, std::unique_ptr<Module>> modules_;
  std::shared_ptr<ModulePool> pool_;
  std::vector<Mapping> maps_;  // log order
  // maps_ indices by lo, and the running maximum of hi in that order.
  std::vector<uint32_t> order_;
  std::vector<uint64_t> max_hi_;
  bool sorted_ = true;
  DwOptions options_;
};

}  // namespace

bool IsSystemLibraryPath(const std::string& resolved) {
  // The distribution's programs too: python3.11-dbg's DWARF (5 MB of
  // compressed .debug_info) made tracewrap's encode of one python3 run
  // 0.35 s, longer than the run (issue 18's python3 behind a shim).
  static const char* const kDirs[] = {"/lib/",     "/lib64/",    "/usr/lib/", "/usr/lib64/",
                                      "/usr/libexec/", "/bin/", "/sbin/", "/usr/bin/",
                                      "/usr/sbin/"};
  for (const char* dir : kDirs) {
    if (resolved.compare(0, std::strlen(dir), dir) == 0) return true;
  }
  return false;
}

bool UsesDwarf(const std::string& path, const DwOptions& options) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return options.system_dwarf || !IsSystemLibraryPath(Resolved(path));
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  const bool dwarf = ReadsDwarf(path, elf, options);
  if (elf != nullptr) elf_end(elf);
  close(fd);
  return dwarf;
}

// The options with their debuginfod lookup made: one per call, so one budget
// and one answer per build-id for everything made from the result.
DwOptions WithDebuginfod(const DwOptions& options) {
  DwOptions o = options;
  if (o.offline) {
    o.debuginfod = nullptr;
  } else if (o.debuginfod == nullptr) {
    o.debuginfod = DebuginfodLookup::Create(o.debuginfod_budget_s);
  }
  return o;
}

std::unique_ptr<Symbolizer> MakeDwSymbolizer(const DwOptions& options) {
  return std::make_unique<DwSymbolizer>(WithDebuginfod(options));
}

std::unique_ptr<Symbolizer> MakeDwSymbolizer(bool offline) {
  DwOptions options;
  options.offline = offline;
  return MakeDwSymbolizer(options);
}

SymbolizerFactory DefaultSymbolizerFactory(const DwOptions& o) {
  const DwOptions options = WithDebuginfod(o);
  return [options](const log::LogFile&) -> std::unique_ptr<Symbolizer> {
    return std::make_unique<DwSymbolizer>(options);
  };
}

SharedSymbols::SharedSymbols(const DwOptions& o) {
  const DwOptions options = WithDebuginfod(o);
  auto pool = std::make_shared<ModulePool>(options);
  factory_ = [options, pool](const log::LogFile&) -> std::unique_ptr<Symbolizer> {
    return std::make_unique<DwSymbolizer>(options, pool);
  };
  warm_ = [pool](const std::string& path) {
    std::lock_guard<std::mutex> lock(pool->mu());
    pool->Get(path)->Warm();
  };
}

SymbolizerFactory SharedSymbolizerFactory(const DwOptions& o) { return SharedSymbols(o).Factory(); }

SymbolizerFactory DefaultSymbolizerFactory(bool offline) {
  DwOptions options;
  options.offline = offline;
  return DefaultSymbolizerFactory(options);
}

}  // namespace gotrace
