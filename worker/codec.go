package worker

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"
)

// The wire codec carries requests and results between the operator and its workers. Both
// ends are the same binary (the pool checks it at the handshake), so values travel by
// their Go types without descriptors: structs as their exported fields in order, values of
// interface type with a tag naming their concrete type among the few that package data
// holds. JSON would turn every integer into a float64 (renderers, Puccini and the
// controller tell int64 from float64) and costs several times more (docs/benchmarks.md).
// Decoding is bounded: lengths never exceed the bytes left, nesting never exceeds
// maxDepth, and an unknown tag is an error, never a panic.

// maxDepth bounds the nesting of a decoded (or encoded) value.
const maxDepth = 10000

// errDepth reports a value nested more deeply than maxDepth.
var errDepth = errors.New("value nested too deeply")

// Tags of the concrete types a value of interface type may hold.
const (
	tagNil byte = iota
	tagBool
	tagString
	tagInt
	tagInt64
	tagInt32
	tagUint64
	tagUint
	tagFloat64
	tagFloat32
	tagStringMap
	tagAnyMap
	tagList
	tagNumber
	tagTime
	tagBytes
	tagStrings
	tagStringStringMap
	tagInt8
	tagInt16
	tagUint8
	tagUint16
	tagUint32
)

// Marshal encodes the value v points to (of any type whose parts the codec supports);
// Unmarshal decodes it into a value of the same type.
func Marshal(v any) ([]byte, error) {
	source := reflect.ValueOf(v)
	if source.Kind() != reflect.Pointer || source.IsNil() {
		return nil, fmt.Errorf("marshal needs a non-nil pointer, not %T", v)
	}
	e := &encoder{buf: make([]byte, 0, 4096)}
	if err := e.value(source.Elem(), 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// Unmarshal decodes data into the value v points to; v must have the type that was
// marshalled.
func Unmarshal(data []byte, v any) error {
	target := reflect.ValueOf(v)
	if target.Kind() != reflect.Pointer || target.IsNil() {
		return fmt.Errorf("unmarshal needs a non-nil pointer, not %T", v)
	}
	d := &decoder{data: data}
	if err := d.value(target.Elem(), 0); err != nil {
		return err
	}
	if d.pos != len(d.data) {
		return fmt.Errorf("%d bytes left after the value", len(d.data)-d.pos)
	}
	return nil
}

type encoder struct {
	buf []byte
}

func (e *encoder) uvarint(n uint64) { e.buf = binary.AppendUvarint(e.buf, n) }
func (e *encoder) varint(n int64)   { e.buf = binary.AppendVarint(e.buf, n) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.buf = append(e.buf, s...) }

func (e *encoder) float(f float64) {
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(f))
}

// value encodes v by its static type.
func (e *encoder) value(v reflect.Value, depth int) error {
	if depth > maxDepth {
		return errDepth
	}
	switch v.Kind() {
	case reflect.Bool:
		e.buf = append(e.buf, boolByte(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.varint(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.uvarint(v.Uint())
	case reflect.Float32, reflect.Float64:
		e.float(v.Float())
	case reflect.String:
		e.str(v.String())
	case reflect.Interface:
		if v.IsNil() {
			e.buf = append(e.buf, tagNil)
			return nil
		}
		return e.any(v.Elem().Interface(), depth+1)
	case reflect.Pointer:
		if v.IsNil() {
			e.buf = append(e.buf, 0)
			return nil
		}
		e.buf = append(e.buf, 1)
		return e.value(v.Elem(), depth+1)
	case reflect.Slice:
		return e.slice(v, depth)
	case reflect.Array:
		for i := range v.Len() {
			if err := e.value(v.Index(i), depth+1); err != nil {
				return err
			}
		}
	case reflect.Map:
		return e.mapValue(v, depth)
	case reflect.Struct:
		return e.structValue(v, depth)
	default:
		return fmt.Errorf("cannot encode a value of type %s", v.Type())
	}
	return nil
}

func (e *encoder) slice(v reflect.Value, depth int) error {
	if v.IsNil() {
		e.uvarint(0)
		return nil
	}
	e.uvarint(uint64(v.Len()) + 1)
	if v.Type().Elem().Kind() == reflect.Uint8 {
		e.buf = append(e.buf, v.Bytes()...)
		return nil
	}
	for i := range v.Len() {
		if err := e.value(v.Index(i), depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (e *encoder) mapValue(v reflect.Value, depth int) error {
	if v.IsNil() {
		e.uvarint(0)
		return nil
	}
	e.uvarint(uint64(v.Len()) + 1)
	iter := v.MapRange()
	for iter.Next() {
		if err := e.value(iter.Key(), depth+1); err != nil {
			return err
		}
		if err := e.value(iter.Value(), depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (e *encoder) structValue(v reflect.Value, depth int) error {
	if t, ok := v.Interface().(time.Time); ok {
		data, err := t.MarshalBinary()
		if err != nil {
			return err
		}
		e.str(string(data))
		return nil
	}
	t := v.Type()
	for i := range t.NumField() {
		field := t.Field(i)
		if !field.IsExported() {
			continue
		}
		if err := e.value(v.Field(i), depth+1); err != nil {
			return fmt.Errorf("%s: %w", field.Name, err)
		}
	}
	return nil
}

// any encodes a value of interface type: a tag and the value. The common types of package
// data avoid reflection.
func (e *encoder) any(x any, depth int) error {
	if depth > maxDepth {
		return errDepth
	}
	switch x := x.(type) {
	case nil:
		e.buf = append(e.buf, tagNil)
	case bool:
		e.buf = append(e.buf, tagBool, boolByte(x))
	case string:
		e.buf = append(e.buf, tagString)
		e.str(x)
	case int:
		e.buf = append(e.buf, tagInt)
		e.varint(int64(x))
	case int64:
		e.buf = append(e.buf, tagInt64)
		e.varint(x)
	case int32:
		e.buf = append(e.buf, tagInt32)
		e.varint(int64(x))
	case uint64:
		e.buf = append(e.buf, tagUint64)
		e.uvarint(x)
	case uint:
		e.buf = append(e.buf, tagUint)
		e.uvarint(uint64(x))
	case int16:
		e.buf = append(e.buf, tagInt16)
		e.varint(int64(x))
	case int8:
		e.buf = append(e.buf, tagInt8)
		e.varint(int64(x))
	case uint32:
		e.buf = append(e.buf, tagUint32)
		e.uvarint(uint64(x))
	case uint16:
		e.buf = append(e.buf, tagUint16)
		e.uvarint(uint64(x))
	case uint8:
		e.buf = append(e.buf, tagUint8)
		e.uvarint(uint64(x))
	case float64:
		e.buf = append(e.buf, tagFloat64)
		e.float(x)
	case float32:
		e.buf = append(e.buf, tagFloat32)
		e.float(float64(x))
	case map[string]any:
		e.buf = append(e.buf, tagStringMap)
		return e.stringMap(x, depth)
	case map[any]any:
		e.buf = append(e.buf, tagAnyMap)
		return e.value(reflect.ValueOf(x), depth)
	case []any:
		e.buf = append(e.buf, tagList)
		return e.list(x, depth)
	case json.Number:
		e.buf = append(e.buf, tagNumber)
		e.str(string(x))
	case time.Time:
		e.buf = append(e.buf, tagTime)
		return e.value(reflect.ValueOf(x), depth)
	case []byte:
		e.buf = append(e.buf, tagBytes)
		return e.value(reflect.ValueOf(x), depth)
	case []string:
		e.buf = append(e.buf, tagStrings)
		return e.value(reflect.ValueOf(x), depth)
	case map[string]string:
		e.buf = append(e.buf, tagStringStringMap)
		return e.value(reflect.ValueOf(x), depth)
	default:
		return fmt.Errorf("cannot encode a value of type %T", x)
	}
	return nil
}

func (e *encoder) stringMap(m map[string]any, depth int) error {
	if m == nil {
		e.uvarint(0)
		return nil
	}
	e.uvarint(uint64(len(m)) + 1)
	for key, item := range m {
		e.str(key)
		if err := e.any(item, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (e *encoder) list(l []any, depth int) error {
	if l == nil {
		e.uvarint(0)
		return nil
	}
	e.uvarint(uint64(len(l)) + 1)
	for _, item := range l {
		if err := e.any(item, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// errTruncated reports data that ends inside a value.
var errTruncated = errors.New("truncated value")

type decoder struct {
	data []byte
	pos  int
}

func (d *decoder) byte() (byte, error) {
	if d.pos >= len(d.data) {
		return 0, errTruncated
	}
	b := d.data[d.pos]
	d.pos++
	return b, nil
}

func (d *decoder) uvarint() (uint64, error) {
	n, size := binary.Uvarint(d.data[d.pos:])
	if size <= 0 {
		return 0, errTruncated
	}
	d.pos += size
	return n, nil
}

func (d *decoder) varint() (int64, error) {
	n, size := binary.Varint(d.data[d.pos:])
	if size <= 0 {
		return 0, errTruncated
	}
	d.pos += size
	return n, nil
}

func (d *decoder) float() (float64, error) {
	if len(d.data)-d.pos < 8 {
		return 0, errTruncated
	}
	bits := binary.LittleEndian.Uint64(d.data[d.pos:])
	d.pos += 8
	return math.Float64frombits(bits), nil
}

// length reads a length and checks that so many items (each at least min bytes) fit in
// what is left; nil tells a nil slice or map (length 0 on the wire).
func (d *decoder) length(min int) (n int, isNil bool, err error) {
	raw, err := d.uvarint()
	if err != nil {
		return 0, false, err
	}
	if raw == 0 {
		return 0, true, nil
	}
	if raw-1 > uint64(len(d.data)-d.pos)/uint64(min) {
		return 0, false, errTruncated
	}
	return int(raw - 1), false, nil
}

func (d *decoder) str() (string, error) {
	n, err := d.uvarint()
	if err != nil {
		return "", err
	}
	if n > uint64(len(d.data)-d.pos) {
		return "", errTruncated
	}
	s := string(d.data[d.pos : d.pos+int(n)])
	d.pos += int(n)
	return s, nil
}

// value decodes into v by its static type.
func (d *decoder) value(v reflect.Value, depth int) error {
	if depth > maxDepth {
		return errDepth
	}
	switch v.Kind() {
	case reflect.Bool:
		b, err := d.byte()
		v.SetBool(b != 0)
		return err
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := d.varint()
		v.SetInt(n)
		return err
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := d.uvarint()
		v.SetUint(n)
		return err
	case reflect.Float32, reflect.Float64:
		f, err := d.float()
		v.SetFloat(f)
		return err
	case reflect.String:
		s, err := d.str()
		v.SetString(s)
		return err
	case reflect.Interface:
		x, err := d.any(depth + 1)
		if err != nil {
			return err
		}
		if x != nil {
			value := reflect.ValueOf(x)
			if !value.Type().AssignableTo(v.Type()) {
				return fmt.Errorf("a %T cannot be assigned to %s", x, v.Type())
			}
			v.Set(value)
		}
		return nil
	case reflect.Pointer:
		b, err := d.byte()
		if err != nil || b == 0 {
			return err
		}
		elem := reflect.New(v.Type().Elem())
		if err := d.value(elem.Elem(), depth+1); err != nil {
			return err
		}
		v.Set(elem)
		return nil
	case reflect.Slice:
		return d.slice(v, depth)
	case reflect.Array:
		for i := range v.Len() {
			if err := d.value(v.Index(i), depth+1); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		return d.mapValue(v, depth)
	case reflect.Struct:
		return d.structValue(v, depth)
	}
	return fmt.Errorf("cannot decode a value of type %s", v.Type())
}

func (d *decoder) slice(v reflect.Value, depth int) error {
	n, isNil, err := d.length(1)
	if err != nil || isNil {
		return err
	}
	if v.Type().Elem().Kind() == reflect.Uint8 {
		data := make([]byte, n)
		copy(data, d.data[d.pos:d.pos+n])
		d.pos += n
		v.SetBytes(data)
		return nil
	}
	s := reflect.MakeSlice(v.Type(), n, n)
	for i := range n {
		if err := d.value(s.Index(i), depth+1); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

func (d *decoder) mapValue(v reflect.Value, depth int) error {
	n, isNil, err := d.length(2)
	if err != nil || isNil {
		return err
	}
	t := v.Type()
	m := reflect.MakeMapWithSize(t, n)
	for range n {
		key := reflect.New(t.Key()).Elem()
		if err := d.value(key, depth+1); err != nil {
			return err
		}
		if !key.Comparable() {
			return fmt.Errorf("map key of type %s cannot be compared", key.Type())
		}
		item := reflect.New(t.Elem()).Elem()
		if err := d.value(item, depth+1); err != nil {
			return err
		}
		m.SetMapIndex(key, item)
	}
	v.Set(m)
	return nil
}

func (d *decoder) structValue(v reflect.Value, depth int) error {
	if v.Type() == reflect.TypeFor[time.Time]() {
		s, err := d.str()
		if err != nil {
			return err
		}
		var t time.Time
		if err := t.UnmarshalBinary([]byte(s)); err != nil {
			return err
		}
		v.Set(reflect.ValueOf(t))
		return nil
	}
	t := v.Type()
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			continue
		}
		if err := d.value(v.Field(i), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// any decodes a tagged value of interface type.
func (d *decoder) any(depth int) (any, error) {
	if depth > maxDepth {
		return nil, errDepth
	}
	tag, err := d.byte()
	if err != nil {
		return nil, err
	}
	switch tag {
	case tagNil:
		return nil, nil
	case tagBool:
		b, err := d.byte()
		return b != 0, err
	case tagString:
		return d.str()
	case tagInt, tagInt64, tagInt32, tagInt16, tagInt8:
		n, err := d.varint()
		return signed(tag, n), err
	case tagUint64, tagUint, tagUint32, tagUint16, tagUint8:
		n, err := d.uvarint()
		return unsigned(tag, n), err
	case tagFloat64, tagFloat32:
		f, err := d.float()
		if tag == tagFloat32 {
			return float32(f), err
		}
		return f, err
	case tagStringMap:
		return d.stringMap(depth)
	case tagList:
		return d.list(depth)
	case tagNumber:
		s, err := d.str()
		return json.Number(s), err
	}
	return d.typed(tag, depth)
}

// signed returns n as the integer type of a tag.
func signed(tag byte, n int64) any {
	switch tag {
	case tagInt:
		return int(n)
	case tagInt32:
		return int32(n)
	case tagInt16:
		return int16(n)
	case tagInt8:
		return int8(n)
	}
	return n
}

// unsigned returns n as the unsigned integer type of a tag.
func unsigned(tag byte, n uint64) any {
	switch tag {
	case tagUint:
		return uint(n)
	case tagUint32:
		return uint32(n)
	case tagUint16:
		return uint16(n)
	case tagUint8:
		return uint8(n)
	}
	return n
}

// typed decodes the tagged types that go through reflection.
func (d *decoder) typed(tag byte, depth int) (any, error) {
	var target reflect.Value
	switch tag {
	case tagAnyMap:
		target = reflect.New(reflect.TypeFor[map[any]any]())
	case tagTime:
		target = reflect.New(reflect.TypeFor[time.Time]())
	case tagBytes:
		target = reflect.New(reflect.TypeFor[[]byte]())
	case tagStrings:
		target = reflect.New(reflect.TypeFor[[]string]())
	case tagStringStringMap:
		target = reflect.New(reflect.TypeFor[map[string]string]())
	default:
		return nil, fmt.Errorf("unknown value tag %d", tag)
	}
	if err := d.value(target.Elem(), depth); err != nil {
		return nil, err
	}
	return target.Elem().Interface(), nil
}

func (d *decoder) stringMap(depth int) (map[string]any, error) {
	n, isNil, err := d.length(2)
	if err != nil || isNil {
		return nil, err
	}
	m := make(map[string]any, n)
	for range n {
		key, err := d.str()
		if err != nil {
			return nil, err
		}
		if m[key], err = d.any(depth + 1); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (d *decoder) list(depth int) ([]any, error) {
	n, isNil, err := d.length(1)
	if err != nil || isNil {
		return nil, err
	}
	l := make([]any, n)
	for i := range n {
		if l[i], err = d.any(depth + 1); err != nil {
			return nil, err
		}
	}
	return l, nil
}
