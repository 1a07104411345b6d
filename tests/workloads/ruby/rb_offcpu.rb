# frozen_string_literal: true

# Off-CPU ground truth for liveprof's Ruby frames (issue 15).
#
# Each round sleeps 120 ms in nap_long and 40 ms in nap_short, so of the
# time the main thread spends blocked inside the two, 3/4 is in nap_long,
# give or take each sleep's overshoot (its wake-up latency).
# Usage: rb_offcpu.rb SECONDS

def nap_long
  sleep 0.120
end

def nap_short
  sleep 0.040
end

def main(seconds)
  finish = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < finish
    nap_long
    nap_short
  end
end

main(Float(ARGV[0]))
