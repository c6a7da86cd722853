// Files compiled into the binary (SQL migrations and named queries, the OpenAPI
// document): see kforge_embed_files in cmake/KforgeHelpers.cmake. Arrays end with
// {nullptr, nullptr}. Used by db/sql.cpp and api/routes/meta_routes.cpp.
// Test: ctest -R 'db_migrations_test|api_core_test' (migrations, the OpenAPI document).
#pragma once

namespace kforge {

//! One embedded file: path relative to its folder, and its full text.
struct EmbeddedFile {
  const char* name;
  const char* text;
};

}  // namespace kforge
