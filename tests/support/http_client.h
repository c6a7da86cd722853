// A deliberately raw HTTP/1.1 client over a TCP socket, so server tests can send
// exactly the bytes they mean (chunked bodies, slow headers, garbage).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kforge::test {

//! A parsed response; header names lower-case.
struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
};

//! Sends one request to 127.0.0.1:port with Connection: close and reads the
//! whole response (timeout in seconds). status 0 means no response.
RawResponse http_request(int port, const std::string& method, const std::string& path, const std::string& body = "",
                         const std::vector<std::string>& extra_headers = {}, int timeout_s = 10);

//! Sends raw bytes and returns the raw response text.
std::string http_raw(int port, const std::string& bytes, int timeout_s = 10);

//! A TCP port on 127.0.0.1 that was free a moment ago.
int free_port();

}  // namespace kforge::test
