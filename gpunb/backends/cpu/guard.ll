; ModuleID = "gpunb_guard"
target triple = ""
target datalayout = ""

@"gpunb_guard_platform" = global [8 x i64] zeroinitializer, align 16
@"gpunb_guard_slots" = global [8192 x i8] zeroinitializer, align 16
@"gpunb_guard_previous" = global [65 x ptr] zeroinitializer, align 16
@"gpunb_guard_previous_info" = global [65 x i32] zeroinitializer, align 16
@"gpunb_guard_key" = global i64 0, align 16
declare i64 @"pthread_self"()

declare ptr @"pthread_getspecific"(i64 %".1")

declare i32 @"pthread_setspecific"(i64 %".1", ptr %".2")

declare i32 @"pthread_key_create"(ptr %".1", ptr %".2")

declare i32 @"sigaltstack"(ptr %".1", ptr %".2")

declare ptr @"malloc"(i64 %".1")

declare void @"free"(ptr %".1")

declare ptr @"signal"(i32 %".1", ptr %".2")

declare void @"llvm.memset.p0.i64"(ptr %".1", i8 %".2", i64 %".3", i1 %".4")

declare i32 @"_setjmp"(ptr %".1") returns_twice

declare void @"_longjmp"(ptr %".1", i32 %".2") noreturn

define internal void @"gpunb_guard_altstack_free"(ptr %".1")
{
entry:
  %".3" = alloca [32 x i8], align 16
  %".4" = ptrtoint ptr %".1" to i64
  %".5" = icmp ugt i64 %".4", 1
  br i1 %".5", label %"ours", label %"out"
ours:
  %".7" = call i32 @"sigaltstack"(ptr null, ptr %".3")
  %".8" = load ptr, ptr %".3"
  %".9" = icmp eq ptr %".8", %".1"
  br i1 %".9", label %"free", label %"out"
free:
  %".11" = alloca [32 x i8], align 16
  call void @"llvm.memset.p0.i64"(ptr %".11", i8 0, i64 32, i1 0)
  %".13" = getelementptr [8 x i64], [8 x i64]* @"gpunb_guard_platform", i64 0, i64 5
  %".14" = load i64, [8 x i64]* %".13"
  %".15" = trunc i64 %".14" to i32
  %".16" = getelementptr [8 x i64], [8 x i64]* @"gpunb_guard_platform", i64 0, i64 3
  %".17" = load i64, [8 x i64]* %".16"
  %".18" = getelementptr i8, ptr %".11", i64 %".17"
  store i32 %".15", ptr %".18"
  %".20" = call i32 @"sigaltstack"(ptr %".11", ptr null)
  call void @"free"(ptr %".1")
  br label %"out"
out:
  ret void
}

define i32 @"gpunb_guard_init"()
{
entry:
  %".2" = call i32 @"pthread_key_create"(i64* @"gpunb_guard_key", void (ptr)* @"gpunb_guard_altstack_free")
  ret i32 %".2"
}

define internal void @"gpunb_guard_thread"()
{
entry:
  %".2" = load i64, i64* @"gpunb_guard_key"
  %".3" = call ptr @"pthread_getspecific"(i64 %".2")
  %".4" = ptrtoint ptr %".3" to i64
  %".5" = icmp eq i64 %".4", 0
  br i1 %".5", label %"new", label %"out"
new:
  %".7" = alloca [32 x i8], align 16
  call void @"llvm.memset.p0.i64"(ptr %".7", i8 0, i64 32, i1 0)
  %".9" = call i32 @"sigaltstack"(ptr null, ptr %".7")
  %".10" = getelementptr [8 x i64], [8 x i64]* @"gpunb_guard_platform", i64 0, i64 3
  %".11" = load i64, [8 x i64]* %".10"
  %".12" = getelementptr i8, ptr %".7", i64 %".11"
  %".13" = load i32, ptr %".12"
  %".14" = getelementptr [8 x i64], [8 x i64]* @"gpunb_guard_platform", i64 0, i64 5
  %".15" = load i64, [8 x i64]* %".14"
  %".16" = trunc i64 %".15" to i32
  %".17" = and i32 %".13", %".16"
  %".18" = icmp ne i32 %".17", 0
  br i1 %".18", label %"make", label %"has"
has:
  %".20" = inttoptr i64 1 to ptr
  %".21" = call i32 @"pthread_setspecific"(i64 %".2", ptr %".20")
  br label %"out"
make:
  %".23" = call ptr @"malloc"(i64 65536)
  %".24" = ptrtoint ptr %".23" to i64
  %".25" = icmp eq i64 %".24", 0
  br i1 %".25", label %"out", label %"got"
out:
  ret void
got:
  %".27" = alloca [32 x i8], align 16
  call void @"llvm.memset.p0.i64"(ptr %".27", i8 0, i64 32, i1 0)
  store ptr %".23", ptr %".27"
  %".30" = getelementptr [8 x i64], [8 x i64]* @"gpunb_guard_platform", i64 0, i64 4
  %".31" = load i64, [8 x i64]* %".30"
  %".32" = getelementptr i8, ptr %".27", i64 %".31"
  store i64 65536, ptr %".32"
  %".34" = call i32 @"sigaltstack"(ptr %".27", ptr null)
  %".35" = call i32 @"pthread_setspecific"(i64 %".2", ptr %".23")
  br label %"out"
}

define internal void @"gpunb_guard_land"(ptr %".1", i32 %".2") noinline
{
entry:
  %".4" = getelementptr i8, ptr %".1", i64 520
  %".5" = load ptr, ptr %".4"
  %".6" = icmp eq i32 %".2", 2
  br i1 %".6", label %"fault", label %"free"
fault:
  %".8" = getelementptr i8, ptr %".5", i64 72
  %".9" = load ptr, ptr %".8"
  %".10" = cmpxchg ptr %".9", i32 0, i32 6 seq_cst monotonic
  %".11" = extractvalue {i32, i1} %".10", 1
  br i1 %".11", label %"fault.write", label %"fault.out"
free:
  %".78" = getelementptr i8, ptr %".1", i64 544
  %".79" = load ptr, ptr %".78"
  %".80" = getelementptr i8, ptr %".1", i64 552
  %".81" = load i64, ptr %".80"
  br label %"frames.head"
fault.write:
  %".13" = getelementptr i8, ptr %".1", i64 576
  %".14" = load i32, ptr %".13"
  %".15" = getelementptr i8, ptr %".9", i64 128
  store i32 %".14", ptr %".15"
  %".17" = getelementptr i8, ptr %".1", i64 580
  %".18" = load i32, ptr %".17"
  %".19" = getelementptr i8, ptr %".9", i64 132
  store i32 %".18", ptr %".19"
  %".21" = getelementptr i8, ptr %".1", i64 584
  %".22" = load i64, ptr %".21"
  %".23" = getelementptr i8, ptr %".9", i64 136
  store i64 %".22", ptr %".23"
  %".25" = getelementptr i8, ptr %".1", i64 592
  %".26" = load i64, ptr %".25"
  %".27" = getelementptr i8, ptr %".9", i64 144
  store i64 %".26", ptr %".27"
  %".29" = getelementptr i8, ptr %".1", i64 600
  %".30" = load i64, ptr %".29"
  %".31" = getelementptr i8, ptr %".9", i64 152
  store i64 %".30", ptr %".31"
  %".33" = ptrtoint ptr %".1" to i64
  %".34" = getelementptr i8, ptr %".1", i64 600
  %".35" = load i64, ptr %".34"
  %".36" = sub i64 %".33", %".35"
  %".37" = getelementptr i8, ptr %".9", i64 160
  store i64 %".36", ptr %".37"
  %".39" = getelementptr i8, ptr %".1", i64 528
  %".40" = load ptr, ptr %".39"
  %".41" = ptrtoint ptr %".40" to i64
  %".42" = icmp ne i64 %".41", 0
  br i1 %".42", label %"fault.ids", label %"fault.out"
fault.out:
  %".75" = getelementptr i8, ptr %".5", i64 96
  %".76" = cmpxchg ptr %".75", i32 0, i32 3 seq_cst monotonic
  br label %"free"
fault.ids:
  %".44" = getelementptr i8, ptr %".40", i64 0
  %".45" = load i32, ptr %".44"
  %".46" = getelementptr i8, ptr %".9", i64 28
  store i32 %".45", ptr %".46"
  %".48" = getelementptr i8, ptr %".40", i64 12
  %".49" = load i32, ptr %".48"
  %".50" = getelementptr i8, ptr %".9", i64 40
  store i32 %".49", ptr %".50"
  %".52" = getelementptr i8, ptr %".40", i64 4
  %".53" = load i32, ptr %".52"
  %".54" = getelementptr i8, ptr %".9", i64 32
  store i32 %".53", ptr %".54"
  %".56" = getelementptr i8, ptr %".40", i64 16
  %".57" = load i32, ptr %".56"
  %".58" = getelementptr i8, ptr %".9", i64 44
  store i32 %".57", ptr %".58"
  %".60" = getelementptr i8, ptr %".40", i64 8
  %".61" = load i32, ptr %".60"
  %".62" = getelementptr i8, ptr %".9", i64 36
  store i32 %".61", ptr %".62"
  %".64" = getelementptr i8, ptr %".40", i64 20
  %".65" = load i32, ptr %".64"
  %".66" = getelementptr i8, ptr %".9", i64 48
  store i32 %".65", ptr %".66"
  %".68" = getelementptr i8, ptr %".40", i64 176
  %".69" = load i32, ptr %".68"
  %".70" = getelementptr i8, ptr %".9", i64 168
  store i32 %".69", ptr %".70"
  %".72" = getelementptr i8, ptr %".9", i64 172
  store i32 1, ptr %".72"
  br label %"fault.out"
frames.head:
  %"i" = phi  i64 [0, %"free"], [%".91", %"frames.step"]
  %".83" = icmp slt i64 %"i", %".81"
  br i1 %".83", label %"frames.body", label %"frames.done"
frames.body:
  %".85" = mul i64 %"i", 192
  %".86" = getelementptr i8, ptr %".79", i64 %".85"
  %".87" = getelementptr i8, ptr %".86", i64 168
  %".88" = load ptr, ptr %".87"
  call void @"free"(ptr %".88")
  br label %"frames.step"
frames.step:
  %".91" = add i64 %"i", 1
  br label %"frames.head"
frames.done:
  %".93" = getelementptr i8, ptr %".1", i64 536
  %".94" = load ptr, ptr %".93"
  call void @"free"(ptr %".94")
  %".96" = getelementptr i8, ptr %".1", i64 544
  %".97" = load ptr, ptr %".96"
  call void @"free"(ptr %".97")
  %".99" = getelementptr i8, ptr %".1", i64 560
  %".100" = load ptr, ptr %".99"
  call void @"free"(ptr %".100")
  %".102" = getelementptr i8, ptr %".1", i64 568
  %".103" = load ptr, ptr %".102"
  call void @"free"(ptr %".103")
  %".105" = getelementptr i8, ptr %".1", i64 616
  %".106" = load ptr, ptr %".105"
  call void @"free"(ptr %".106")
  ret void
}

define void @"gpunb_job"(ptr %".1")
{
entry:
  %".3" = alloca [640 x i8], align 16
  call void @"llvm.memset.p0.i64"(ptr %".3", i8 0, i64 640, i1 0)
  call void @"gpunb_guard_thread"()
  %".6" = call i64 @"pthread_self"()
  %".7" = getelementptr i8, ptr %".3", i64 512
  store i64 %".6", ptr %".7"
  %".9" = getelementptr i8, ptr %".3", i64 520
  store ptr %".1", ptr %".9"
  %".11" = getelementptr i8, ptr %".3", i64 608
  store i32 -1, ptr %".11"
  br label %"claim.head"
registered:
  %".38" = call i32 @"_setjmp"(ptr %".3")
  %".39" = icmp eq i32 %".38", 0
  br i1 %".39", label %"run", label %"land"
claim.head:
  %"claim" = phi  i32 [0, %"entry"], [%".35", %"claim.step"]
  %".14" = icmp slt i32 %"claim", 256
  br i1 %".14", label %"claim.visit", label %"claim.done"
claim.step:
  %".35" = add i32 %"claim", 1
  br label %"claim.head"
claim.done:
  br label %"registered"
claim.visit:
  %".16" = zext i32 %"claim" to i64
  %".17" = mul i64 %".16", 32
  %".18" = add i64 %".17", 0
  %".19" = getelementptr [8192 x i8], [8192 x i8]* @"gpunb_guard_slots", i64 0, i64 %".18"
  %".20" = cmpxchg [8192 x i8]* %".19", ptr null, ptr %".3" acq_rel monotonic
  %".21" = extractvalue {ptr, i1} %".20", 1
  br i1 %".21", label %"claim.won", label %"claim.step"
claim.won:
  %".23" = zext i32 %"claim" to i64
  %".24" = mul i64 %".23", 32
  %".25" = add i64 %".24", 8
  %".26" = getelementptr [8192 x i8], [8192 x i8]* @"gpunb_guard_slots", i64 0, i64 %".25"
  %".27" = atomicrmw xchg [8192 x i8]* %".26", i64 %".6" release
  %".28" = zext i32 %"claim" to i64
  %".29" = mul i64 %".28", 32
  %".30" = add i64 %".29", 16
  %".31" = getelementptr [8192 x i8], [8192 x i8]* @"gpunb_guard_slots", i64 0, i64 %".30"
  %".32" = atomicrmw xchg [8192 x i8]* %".31", ptr %".1" release
  store i32 %"claim", ptr %".11"
  br label %"registered"
run:
  %".41" = getelementptr i8, ptr %".1", i64 88
  %".42" = load void (ptr, ptr)*, ptr %".41"
  call void %".42"(ptr %".1", ptr %".3")
  br label %"done"
land:
  call void @"gpunb_guard_land"(ptr %".3", i32 %".38")
  br label %"done"
done:
  %".47" = load i32, ptr %".11"
  %".48" = icmp sge i32 %".47", 0
  br i1 %".48", label %"release", label %"out"
release:
  %".50" = zext i32 %".47" to i64
  %".51" = mul i64 %".50", 32
  %".52" = add i64 %".51", 16
  %".53" = getelementptr [8192 x i8], [8192 x i8]* @"gpunb_guard_slots", i64 0, i64 %".52"
  %".54" = atomicrmw xchg [8192 x i8]* %".53", ptr null release
  %".55" = zext i32 %".47" to i64
  %".56" = mul i64 %".55", 32
  %".57" = add i64 %".56", 8
  %".58" = getelementptr [8192 x i8], [8192 x i8]* @"gpunb_guard_slots", i64 0, i64 %".57"
  %".59" = atomicrmw xchg [8192 x i8]* %".58", i64 0 release
  %".60" = zext i32 %".47" to i64
  %".61" = mul i64 %".60", 32
  %".62" = add i64 %".61", 0
  %".63" = getelementptr [8192 x i8], [8192 x i8]* @"gpunb_guard_slots", i64 0, i64 %".62"
  %".64" = atomicrmw xchg [8192 x i8]* %".63", ptr null release
  br label %"out"
out:
  ret void
}

define void @"gpunb_guard_sigint"(i32 %".1", ptr %".2", ptr %".3")
{
entry:
  br label %"sigint.head"
sigint.head:
  %"sigint" = phi  i32 [0, %"entry"], [%".19", %"sigint.step"]
  %".6" = icmp slt i32 %"sigint", 256
  br i1 %".6", label %"sigint.visit", label %"sigint.done"
sigint.step:
  %".19" = add i32 %"sigint", 1
  br label %"sigint.head"
sigint.done:
  %".21" = zext i32 %".1" to i64
  %".22" = getelementptr [65 x ptr], [65 x ptr]* @"gpunb_guard_previous", i64 0, i64 %".21"
  %".23" = load ptr, [65 x ptr]* %".22"
  %".24" = getelementptr [65 x i32], [65 x i32]* @"gpunb_guard_previous_info", i64 0, i64 %".21"
  %".25" = load i32, [65 x i32]* %".24"
  %".26" = ptrtoint ptr %".23" to i64
  %".27" = icmp ugt i64 %".26", 1
  br i1 %".27", label %"chain", label %"chain.default"
sigint.visit:
  %".8" = zext i32 %"sigint" to i64
  %".9" = mul i64 %".8", 32
  %".10" = add i64 %".9", 16
  %".11" = getelementptr [8192 x i8], [8192 x i8]* @"gpunb_guard_slots", i64 0, i64 %".10"
  %".12" = load atomic ptr, [8192 x i8]* %".11" acquire, align 8
  %".13" = ptrtoint ptr %".12" to i64
  %".14" = icmp ne i64 %".13", 0
  br i1 %".14", label %"sigint.hit", label %"sigint.step"
sigint.hit:
  %".16" = getelementptr i8, ptr %".12", i64 96
  %".17" = cmpxchg ptr %".16", i32 0, i32 1 seq_cst monotonic
  br label %"sigint.step"
chain:
  %".31" = icmp ne i32 %".25", 0
  br i1 %".31", label %"chain.info", label %"chain.plain"
chain.default:
  %".29" = call ptr @"signal"(i32 %".1", ptr null)
  br label %"chain.out"
chain.info:
  %".33" = load void (i32, ptr, ptr)*, [65 x ptr]* %".22"
  call void %".33"(i32 %".1", ptr %".2", ptr %".3")
  br label %"chain.out"
chain.plain:
  %".36" = load void (i32)*, [65 x ptr]* %".22"
  call void %".36"(i32 %".1")
  br label %"chain.out"
chain.out:
  ret void
}

define void @"gpunb_guard_fault"(i32 %".1", ptr %".2", ptr %".3")
{
entry:
  %".5" = call i64 @"pthread_self"()
  %".6" = alloca [8 x i8], align 16
  store ptr null, ptr %".6"
  br label %"fault.head"
fault.searched:
  %".31" = load ptr, ptr %".6"
  %".32" = ptrtoint ptr %".31" to i64
  %".33" = icmp ne i64 %".32", 0
  br i1 %".33", label %"jump", label %"chain"
fault.head:
  %"fault" = phi  i32 [0, %"entry"], [%".28", %"fault.step"]
  %".9" = icmp slt i32 %"fault", 256
  br i1 %".9", label %"fault.visit", label %"fault.done"
fault.step:
  %".28" = add i32 %"fault", 1
  br label %"fault.head"
fault.done:
  br label %"fault.searched"
fault.visit:
  %".11" = zext i32 %"fault" to i64
  %".12" = mul i64 %".11", 32
  %".13" = add i64 %".12", 0
  %".14" = getelementptr [8192 x i8], [8192 x i8]* @"gpunb_guard_slots", i64 0, i64 %".13"
  %".15" = load atomic ptr, [8192 x i8]* %".14" acquire, align 8
  %".16" = zext i32 %"fault" to i64
  %".17" = mul i64 %".16", 32
  %".18" = add i64 %".17", 8
  %".19" = getelementptr [8192 x i8], [8192 x i8]* @"gpunb_guard_slots", i64 0, i64 %".18"
  %".20" = load atomic i64, [8192 x i8]* %".19" acquire, align 8
  %".21" = ptrtoint ptr %".15" to i64
  %".22" = icmp ne i64 %".21", 0
  %".23" = icmp eq i64 %".20", %".5"
  %".24" = and i1 %".22", %".23"
  br i1 %".24", label %"fault.hit", label %"fault.step"
fault.hit:
  store ptr %".15", ptr %".6"
  br label %"fault.searched"
jump:
  %".54" = getelementptr i8, ptr %".31", i64 576
  store i32 %".1", ptr %".54"
  %".56" = getelementptr i8, ptr %".2", i64 8
  %".57" = load i32, ptr %".56"
  %".58" = getelementptr i8, ptr %".31", i64 580
  store i32 %".57", ptr %".58"
  %".60" = getelementptr [8 x i64], [8 x i64]* @"gpunb_guard_platform", i64 0, i64 0
  %".61" = load i64, [8 x i64]* %".60"
  %".62" = getelementptr i8, ptr %".2", i64 %".61"
  %".63" = load i64, ptr %".62"
  %".64" = getelementptr i8, ptr %".31", i64 584
  store i64 %".63", ptr %".64"
  %".66" = getelementptr [8 x i64], [8 x i64]* @"gpunb_guard_platform", i64 0, i64 1
  %".67" = load i64, [8 x i64]* %".66"
  %".68" = icmp sge i64 %".67", 0
  br i1 %".68", label %"context", label %"go"
chain:
  %".35" = zext i32 %".1" to i64
  %".36" = getelementptr [65 x ptr], [65 x ptr]* @"gpunb_guard_previous", i64 0, i64 %".35"
  %".37" = load ptr, [65 x ptr]* %".36"
  %".38" = getelementptr [65 x i32], [65 x i32]* @"gpunb_guard_previous_info", i64 0, i64 %".35"
  %".39" = load i32, [65 x i32]* %".38"
  %".40" = ptrtoint ptr %".37" to i64
  %".41" = icmp ugt i64 %".40", 1
  br i1 %".41", label %"chain.1", label %"chain.default"
chain.1:
  %".45" = icmp ne i32 %".39", 0
  br i1 %".45", label %"chain.info", label %"chain.plain"
chain.default:
  %".43" = call ptr @"signal"(i32 %".1", ptr null)
  br label %"chain.out"
chain.info:
  %".47" = load void (i32, ptr, ptr)*, [65 x ptr]* %".36"
  call void %".47"(i32 %".1", ptr %".2", ptr %".3")
  br label %"chain.out"
chain.plain:
  %".50" = load void (i32)*, [65 x ptr]* %".36"
  call void %".50"(i32 %".1")
  br label %"chain.out"
chain.out:
  ret void
context:
  %".70" = getelementptr [8 x i64], [8 x i64]* @"gpunb_guard_platform", i64 0, i64 1
  %".71" = load i64, [8 x i64]* %".70"
  %".72" = getelementptr i8, ptr %".3", i64 %".71"
  %".73" = load i64, ptr %".72"
  %".74" = getelementptr i8, ptr %".31", i64 592
  store i64 %".73", ptr %".74"
  %".76" = getelementptr [8 x i64], [8 x i64]* @"gpunb_guard_platform", i64 0, i64 2
  %".77" = load i64, [8 x i64]* %".76"
  %".78" = getelementptr i8, ptr %".3", i64 %".77"
  %".79" = load i64, ptr %".78"
  %".80" = getelementptr i8, ptr %".31", i64 600
  store i64 %".79", ptr %".80"
  br label %"go"
go:
  call void @"_longjmp"(ptr %".31", i32 2)
  unreachable
}
