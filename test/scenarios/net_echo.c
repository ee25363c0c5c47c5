// SPDX-License-Identifier: Apache-2.0
// Scenario: a TCP echo server and client on loopback, plus a thread waiting
// in poll() on a pipe. Network waits must appear under the functions that
// wait (-pprof=net): client_roundtrips, server_loop, pipe_waiter.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int listen_fd;
static int pipe_fds[2];

__attribute__((noinline)) static void* server_loop(void* arg) {
  (void)arg;
  int c = accept(listen_fd, NULL, NULL);
  char buf[64];
  ssize_t n;
  int i = 0;
  while ((n = recv(c, buf, sizeof buf, 0)) > 0) {
    if (i++ % 4 == 0) usleep(300);  // a slow reply now and then
    send(c, buf, (size_t)n, 0);
  }
  close(c);
  return NULL;
}

__attribute__((noinline)) static int client_roundtrips(int port, int count) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, (struct sockaddr*)&a, sizeof a) != 0) return -1;
  int ok = 0;
  char msg[16], back[16];
  for (int i = 0; i < count; i++) {
    snprintf(msg, sizeof msg, "ping %d", i);
    send(s, msg, strlen(msg) + 1, 0);
    ssize_t got = 0;
    while (got < (ssize_t)strlen(msg) + 1) {
      ssize_t n = recv(s, back + got, sizeof back - (size_t)got, 0);
      if (n <= 0) break;
      got += n;
    }
    if (strcmp(msg, back) == 0) ok++;
  }
  close(s);
  return ok;
}

__attribute__((noinline)) static void* pipe_waiter(void* arg) {
  (void)arg;
  struct pollfd p = {pipe_fds[0], POLLIN, 0};
  poll(&p, 1, 5000);
  char c = 0;
  read(pipe_fds[0], &c, 1);
  return (void*)(long)c;
}

int main(void) {
  listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listen_fd, (struct sockaddr*)&a, sizeof a) != 0 || listen(listen_fd, 1) != 0) return 2;
  socklen_t len = sizeof a;
  getsockname(listen_fd, (struct sockaddr*)&a, &len);
  if (pipe(pipe_fds) != 0) return 2;
  pthread_t srv, pw;
  pthread_create(&srv, NULL, server_loop, NULL);
  pthread_create(&pw, NULL, pipe_waiter, NULL);
  const int ok = client_roundtrips(ntohs(a.sin_port), 200);
  usleep(2000);
  write(pipe_fds[1], "x", 1);
  void* got;
  pthread_join(pw, &got);
  pthread_join(srv, NULL);
  printf("echoed %d, pipe said %c\n", ok, (char)(long)got);
  return ok == 200 ? 0 : 1;
}
