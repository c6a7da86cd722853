// Socket-level HTTP client for tests; handles Content-Length and chunked replies.
// Used by the server tests, e.g. ctest -R 'server_system_test|api_core_test'.
#include "tests/support/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

namespace kforge::test {
namespace {

int connect_local(int port, int timeout_s) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string decode_chunked(const std::string& body) {
  std::string out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t line_end = body.find("\r\n", pos);
    if (line_end == std::string::npos) break;
    size_t size = std::stoul(body.substr(pos, line_end - pos), nullptr, 16);
    if (size == 0) break;
    out += body.substr(line_end + 2, size);
    pos = line_end + 2 + size + 2;
  }
  return out;
}

}  // namespace

std::string http_raw(int port, const std::string& bytes, int timeout_s) {
  int fd = connect_local(port, timeout_s);
  if (fd < 0) return "";
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string response;
  char buf[65536];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) response.append(buf, static_cast<size_t>(n));
  close(fd);
  return response;
}

RawResponse http_request(int port, const std::string& method, const std::string& path, const std::string& body,
                         const std::vector<std::string>& extra_headers, int timeout_s) {
  std::ostringstream req;
  req << method << " " << path << " HTTP/1.1\r\nHost: 127.0.0.1:" << port << "\r\nConnection: close\r\n";
  bool has_type = false;
  for (const auto& h : extra_headers) {
    req << h << "\r\n";
    if (strncasecmp(h.c_str(), "content-type:", 13) == 0) has_type = true;
  }
  if (!body.empty() || method == "POST" || method == "PUT") {
    if (!has_type) req << "Content-Type: application/json\r\n";
    req << "Content-Length: " << body.size() << "\r\n";
  }
  req << "\r\n" << body;
  std::string raw = http_raw(port, req.str(), timeout_s);
  RawResponse resp;
  size_t header_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || header_end == std::string::npos) return resp;
  resp.status = std::stoi(raw.substr(9, 3));
  std::istringstream headers(raw.substr(0, header_end));
  std::string line;
  std::getline(headers, line);
  while (std::getline(headers, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    resp.headers[name] = value;
  }
  resp.body = raw.substr(header_end + 4);
  if (resp.headers["transfer-encoding"] == "chunked") resp.body = decode_chunked(resp.body);
  return resp;
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

}  // namespace kforge::test
