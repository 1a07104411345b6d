# rb_churn.rb - iseqs made and freed all the time.
#
# Round N compiles a new method Gen#gen_N from source whose file name is
# genM.rb (M = N % 100) and whose def stands on line N % 5 + 1, calls it
# for about a millisecond of CPU through lane_K (K = N % 7) and removes
# it. Nothing refers to its iseq then, and every 16 rounds a GC frees it:
# its slot of the Ruby heap (and the malloc'd body beside it) is handed to
# the objects made next, sometimes the next rounds' iseqs. A profiler that
# names an iseq by its address some time after the sample can give a
# frame another round's name, file or line.
#
# Truth: every gen frame's name, file and line agree (N, N % 100,
# N % 5 + 1), and it runs under lane_K, K = N % 7. A stale name is a
# whole name of another round, consistent in itself: the lane is what
# tells it (for 6 of 7 rounds it could be mistaken for).
#
# Usage: ruby rb_churn.rb [SECONDS]

class Gen
end

# iterations of gen_N's loop: about a millisecond with Debian's ruby 3.1
# here
ITERS = 70_000
GC_EVERY = 16
LANES = 7

def lane_0(obj, name) = obj.__send__(name, ITERS)
def lane_1(obj, name) = obj.__send__(name, ITERS)
def lane_2(obj, name) = obj.__send__(name, ITERS)
def lane_3(obj, name) = obj.__send__(name, ITERS)
def lane_4(obj, name) = obj.__send__(name, ITERS)
def lane_5(obj, name) = obj.__send__(name, ITERS)
def lane_6(obj, name) = obj.__send__(name, ITERS)

# Gen#gen_N's source, its def on line N % 5 + 1
def source(n)
  "\n" * (n % 5) + <<~SRC
    def gen_#{n}(k)
      s = 0
      i = 0
      while i < k
        s += i * #{n % 7 + 1}
        i += 1
      end
      s
    end
  SRC
end

def churn(seconds)
  finish = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
  n = 0
  obj = Gen.new
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < finish
    name = "gen_#{n}"
    Gen.class_eval(source(n), "gen#{n % 100}.rb", 1)
    __send__("lane_#{n % LANES}", obj, name)
    Gen.send(:remove_method, name)
    GC.start if (n % GC_EVERY).zero?
    n += 1
  end
  n
end

STDOUT.sync = true
puts churn(ARGV.empty? ? 60 : ARGV[0].to_f)
