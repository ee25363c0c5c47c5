// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 5): C++ new/delete, which libstdc++'s operator new turns into
// malloc: 64 blocks of 1 MiB with new[], a vector grown to 16 MiB, strings and
// a map, all freed before the end. stderr: the usable bytes of the peak.
#include <malloc.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

int main() {
  std::vector<std::unique_ptr<char[]>> blocks;
  size_t usable = 0;
  for (int i = 0; i < 64; i++) {
    blocks.emplace_back(new char[1 << 20]);
    usable += malloc_usable_size(blocks.back().get());
  }
  std::vector<int> v;
  for (int i = 0; i < (4 << 20); i++) v.push_back(i);  // 16 MiB of int at the end
  usable += malloc_usable_size(v.data());
  std::map<int, std::string> m;
  for (int i = 0; i < 10000; i++) m[i] = std::string(100, static_cast<char>('a' + i % 26));
  long sum = 0;
  for (const auto& [k, s] : m) sum += k + s[0];
  std::fprintf(stderr, "peak_usable>=%zu\n", usable);
  blocks.clear();
  v = std::vector<int>();
  m.clear();
  std::printf("sum %ld\n", sum);
  return 0;
}
