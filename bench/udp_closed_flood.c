/* A drop flood for bench/drops_cost.py (issue 39), for SECONDS, then prints
 * packets per second of wall time, CPU nanoseconds (user + system, its own
 * getrusage) per packet over the run, the median over 20 ms slices of the
 * same (CLOCK_THREAD_CPUTIME_ID per slice: a slice in which another process
 * evicted the caches moves the total but barely the median), and the
 * number of slices. Every packet is dropped by the kernel with a reason,
 * in the receiving (here the same) CPU's softirq, run when this process's
 * sendmmsg re-enables bottom halves, so the drop's cost (and a tracepoint's)
 * is in this process's system time (tick accounting without
 * CONFIG_IRQ_TIME_ACCOUNTING charges softirq work to the task it interrupts).
 *
 *   udp_closed_flood SECONDS          sendmmsg batches of 64 one-byte UDP
 *       datagrams to 127.0.0.1:9, where nothing listens: NO_SOCKET drops
 *       (about 4 us of CPU each on the KVM guest of bench/RESULTS.md).
 *   udp_closed_flood SECONDS packet   sendmmsg batches of 256 60-byte
 *       Ethernet frames of ethertype 0x88b5 (IEEE 802 local experimental) on
 *       "lo" through an AF_PACKET socket (needs CAP_NET_RAW): no protocol
 *       handler takes them, so __netif_receive_skb_core drops each with
 *       UNHANDLED_PROTO; a cheaper drop (about 1.4 us there), so a given
 *       per-drop cost is a larger share. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
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

#define BATCH 256
#define SLICE 0.02 /* seconds of wall time */
#define MAX_SLICES 100000

/* This thread's CPU time (the scheduler's sum_exec_runtime, in ns). */
static double thread_cpu(void) {
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	int packet = argc > 2 && strcmp(argv[2], "packet") == 0;
	static struct mmsghdr m[BATCH];
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(9)};
	inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
	struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_halen = 6,
				 .sll_protocol = htons(0x88b5)};
	unsigned char frame[60] = {0};
	frame[12] = 0x88; /* ethertype 0x88b5; addresses all zero */
	frame[13] = 0xb5;
	char byte = 'x';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	int batch = 64, s;
	if (packet) {
		/* protocol 0: this socket receives nothing itself */
		s = socket(AF_PACKET, SOCK_RAW, 0);
		ll.sll_ifindex = if_nametoindex("lo");
		iov.iov_base = frame;
		iov.iov_len = sizeof frame;
		batch = BATCH;
	} else {
		s = socket(AF_INET, SOCK_DGRAM, 0);
	}
	if (s < 0 || (packet && ll.sll_ifindex == 0)) {
		perror("socket");
		return 1;
	}
	for (int i = 0; i < batch; i++) {
		m[i].msg_hdr.msg_name = packet ? (void *)&ll : (void *)&to;
		m[i].msg_hdr.msg_namelen = packet ? sizeof ll : sizeof to;
		m[i].msg_hdr.msg_iov = &iov;
		m[i].msg_hdr.msg_iovlen = 1;
	}
	unsigned long long sent = 0, slice_sent = 0;
	static double slice_ns[MAX_SLICES];
	int slices = 0;
	double start = now(), end = start + secs, slice_end = start + SLICE;
	double slice_cpu = thread_cpu();
	for (double t = start; t < end; t = now()) {
		int n = sendmmsg(s, m, batch, 0);
		if (n > 0)
			sent += n, slice_sent += n;
		else if (packet) {
			perror("sendmmsg");
			return 1;
		}
		if (t >= slice_end && slice_sent > 0 && slices < MAX_SLICES) {
			double c = thread_cpu();
			slice_ns[slices++] = (c - slice_cpu) * 1e9 / slice_sent;
			slice_cpu = c;
			slice_sent = 0;
			slice_end = t + SLICE;
		}
	}
	qsort(slice_ns, slices, sizeof slice_ns[0], cmp);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		     ru.ru_stime.tv_usec / 1e6;
	printf("%.0f %.1f %.1f %d\n", sent / (now() - start), sent ? cpu * 1e9 / sent : 0.0,
	       slices ? slice_ns[slices / 2] : 0.0, slices);
	return 0;
}
