// A JSON string literal for the runtime's small reports (torchrun's error
// file, the verifier's summary). LibTorch ships no JSON library for C++, and
// escaping is all those reports need.
#pragma once

#include <cstdio>
#include <string>

namespace ddpguard::detail {

inline std::string json_string(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out + "\"";
}

} // namespace ddpguard::detail
