// Files compiled into the binary (SQL migrations and named queries); see
// cmake/EmbedFiles.cmake. Arrays end with {nullptr, nullptr}.
#pragma once

namespace kforge {

//! One embedded file: path relative to its folder, and its full text.
struct EmbeddedFile {
  const char* name;
  const char* text;
};

}  // namespace kforge
