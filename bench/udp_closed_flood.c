/* A UDP flood to a closed port for bench/drops_cost.sh (issue 39): sendmmsg
 * batches of 64 one-byte datagrams to 127.0.0.1:9 for SECONDS, then prints
 * datagrams per second of wall time and CPU nanoseconds (user + system, its
 * own getrusage) per datagram. Every datagram is a NO_SOCKET drop in the receiving
 * (here the same) CPU's softirq, paid inside this process's sendmmsg. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(9)};
	inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
	char byte = 'x';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct mmsghdr m[64];
	memset(m, 0, sizeof m);
	for (int i = 0; i < 64; i++) {
		m[i].msg_hdr.msg_name = &to;
		m[i].msg_hdr.msg_namelen = sizeof to;
		m[i].msg_hdr.msg_iov = &iov;
		m[i].msg_hdr.msg_iovlen = 1;
	}
	unsigned long long sent = 0;
	double start = now(), end = start + secs;
	while (now() < end) {
		int n = sendmmsg(s, m, 64, 0);
		if (n > 0)
			sent += n;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		     ru.ru_stime.tv_usec / 1e6;
	printf("%.0f %.1f\n", sent / (now() - start), sent ? cpu * 1e9 / sent : 0.0);
	return 0;
}
