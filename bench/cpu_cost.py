import os, sys, time
args = sys.argv[1:]
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    fd = os.open("/dev/null", os.O_WRONLY); os.dup2(fd, 1)
    os.execv(args[0], args)
_, status, ru = os.wait4(pid, 0)
wall = time.monotonic() - t0
cpu = ru.ru_utime + ru.ru_stime
print(f"{' '.join(args[1:])}: exit={os.waitstatus_to_exitcode(status)} wall={wall:.3f}s utime={ru.ru_utime*1e3:.2f}ms stime={ru.ru_stime*1e3:.2f}ms cpu={cpu*1e3:.2f}ms maxrss={ru.ru_maxrss}KiB -> {cpu/wall*100:.4f}% of one CPU")
