// Package zerocall calls each method of a value with every argument its
// type's zero value, for the tests that hold a nil handle's methods to
// returning instead of panicking.
package zerocall

import "reflect"

// Methods hands fn each method of v, by its name as "T.Method", and a
// call of it with zero arguments (a variadic method gets a nil slice).
func Methods(v reflect.Value, fn func(name string, call func())) {
	for i := range v.NumMethod() {
		m, name := v.Method(i), v.Type().String()+"."+v.Type().Method(i).Name
		args := make([]reflect.Value, m.Type().NumIn())
		for j := range args {
			args[j] = reflect.Zero(m.Type().In(j))
		}
		fn(name, func() {
			if m.Type().IsVariadic() {
				m.CallSlice(args)
			} else {
				m.Call(args)
			}
		})
	}
}
