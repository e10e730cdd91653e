/** Whether a process of this id is alive (signal 0 checks, sends nothing). */
export const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
