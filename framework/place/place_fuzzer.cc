// Fuzz target: ParsePlace. Any text is parsed without crashing; a place it
// accepts prints as text that parses back to the same place.
#include <cstddef>
#include <cstdint>

#include "framework/place/place.h"
#include "glog/logging.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<tandem::Place> place = tandem::ParsePlace(text);
  if (!place.ok()) {
    CHECK(absl::IsInvalidArgument(place.status())) << place.status();
    return 0;
  }
  const absl::StatusOr<tandem::Place> again = tandem::ParsePlace(place->ToString());
  CHECK(again.ok() && *again == *place) << "'" << text << "' -> " << place->ToString();
  return 0;
}
