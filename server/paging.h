// Offset pages over a sequence that a response carries part of: a model's
// weights (GetWeights, by coordinate) or its file (ExportModel, by byte).
// A request gives an offset and a page size (0: all from the offset); a
// response holds the page and the offset of the next (0: none).

#ifndef HALFSPACE_SERVER_PAGING_H_
#define HALFSPACE_SERVER_PAGING_H_

#include <algorithm>
#include <cstdint>

namespace halfspace {

struct Page {
  int64_t offset = 0;
  int64_t count = 0;        // items in this page, at least 1
  int64_t next_offset = 0;  // where the next page starts; 0: this is the last
};

// The page of `total` items from `offset` that a request of `page_size`
// gets when `fit` items fit in one response. REQUIRES: 0 <= offset < total,
// page_size >= 0.
inline Page PageOf(int64_t total, int64_t offset, int64_t page_size,
                   int64_t fit) {
  const int64_t left = total - offset;
  const int64_t wanted = page_size == 0 ? left : std::min(page_size, left);
  const int64_t count = std::max<int64_t>(1, std::min(wanted, fit));
  return {offset, count, offset + count < total ? offset + count : 0};
}

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_PAGING_H_
